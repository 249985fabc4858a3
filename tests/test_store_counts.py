"""The store's running counts (gateway/pipeline/store_counts.py): what the call grammar and the grounding
rank hosts, components, levels and templates by, read a bounded number of lines at a time."""

from __future__ import annotations

from collections import Counter

from gateway.ingest.record import LogRecord
from gateway.pipeline.fields import LineFields
from gateway.pipeline.query import QueryInterrupted, QuerySurface
from gateway.pipeline.query_vocab import known_values, template_lines
from gateway.pipeline.store import Store
from gateway.pipeline.store_counts import StoreCounts


def _lines(store: Store, hosts: list[str], t0: float = 1.7e9) -> None:
    recs = [LogRecord(ts=t0 + i, source="t", host=h, severity=6, text=f"job {i} done on {h}") for i, h in enumerate(hosts)]
    store.append(recs, [1 if h != "c" else 2 for h in hosts],
                 [LineFields(template="job <*> done on <*>" if h != "c" else "c says <*>") for h in hosts])


def test_counts_read_new_lines_then_older_ones_a_budget_at_a_time(tmp_path):
    store = Store(tmp_path / "s.db")
    hosts = ["a"] * 6 + ["b"] * 3 + ["c"]          # ids 1..10: the newest are b, b, b, c
    _lines(store, hosts)
    q = QuerySurface(store.path)
    exprs = {"host": "coalesce(l.line_host, l.host)", "component": "l.component", "level": "l.level"}
    c = StoreCounts(q, exprs, budget=4)
    c.refresh()                                      # the newest 4 lines first
    assert c.top("host", 5) == ["b", "c"] and sum(n for _, n in c.templates(5)) == 4
    c.refresh()
    c.refresh()                                      # then the older ones, 4 at a time, until the first
    assert c.top("host", 5) == ["a", "b", "c"] and dict(c.templates(5)) == {1: 9, 2: 1}
    c.refresh()                                      # nothing left to count: nothing counted twice
    assert dict(c.templates(5)) == {1: 9, 2: 1}
    _lines(store, ["c"] * 8, t0=1.8e9)               # new lines: counted first
    c.refresh()
    c.refresh()
    assert c.top("host", 1) == ["c"] and dict(c.templates(5)) == {1: 9, 2: 9}
    # caught up, the counts are the store's
    rows, _ = q.execute("SELECT coalesce(l.line_host, l.host), count(*) FROM logs l GROUP BY 1")
    assert Counter({h: n for h, n in rows}) == Counter({"a": 6, "b": 3, "c": 9})
    store.close()


def test_a_read_cut_short_counts_nothing_twice(tmp_path):
    store = Store(tmp_path / "s.db")
    _lines(store, ["a", "b", "a"])
    q = QuerySurface(store.path)

    class Flaky:
        calls = 0

        def execute(self, sql, args=()):
            Flaky.calls += 1
            if Flaky.calls == 3:                       # the templates' statement of the first read
                raise QueryInterrupted("cut")
            return q.execute(sql, args)

    c = StoreCounts(Flaky(), {"host": "l.host", "component": "l.component", "level": "l.level"})
    c.refresh()
    assert c.top("host", 5) == [] and c.templates(5) == []
    c.refresh()
    assert c.top("host", 5) == ["a", "b"] and dict(c.templates(5)) == {1: 3}
    store.close()


def test_the_grammar_and_the_grounding_read_the_running_counts(tmp_path):
    store = Store(tmp_path / "s.db")
    _lines(store, ["press-1", "press-2", "press-1", "c"])
    q = QuerySurface(store.path)
    assert known_values(q, "host") == ["press-1", "c", "press-2"]
    assert template_lines(q, 5) == [(1, "job <*> done on <*>", 3), (2, "c says <*>", 1)]
    store.close()


def test_a_time_window_reads_only_the_ids_past_its_older_lines_and_counts_the_same(tmp_path):
    """No index serves a line's own time: the counted id ranges' newest times let a window's query skip
    the ranges wholly older than it; the counts are those of a full read. Lines replayed out of order (an
    old file tailed late) keep their ranges read."""
    import gateway.pipeline.store_counts as sc
    store = Store(tmp_path / "s.db")
    q = QuerySurface(store.path)
    _lines(store, ["a"] * 50, t0=1.7e9)              # ids 1-50: 1.7e9 + 0..49
    q.counts()
    _lines(store, ["b"] * 50, t0=1.7e9 + 100)        # ids 51-100: 1.7e9 + 100..149
    q._counted = -1e9                                # as after COUNTS_FRESH_S
    c = q.counts()
    assert c.newest() == (1.7e9 + 149, 100)
    assert c.since_floor(1.7e9 + 120) == 50 and c.since_floor(1.7e9 + 10) == 0
    call = {"op": "count", "last_minutes": 0.5}      # the window ending at the newest line's time: 30 s
    where, args = q._filters(call)
    assert "l.id > ?" in where and 50 in args
    assert q.run(call)["count"] == 31                # 1.7e9 + 119..149
    rows, _ = q.execute("SELECT count(*) FROM logs l WHERE coalesce(l.time, l.ts) >= ?", [1.7e9 + 119])
    assert rows[0][0] == 31
    _lines(store, ["c"] * 5, t0=1.7e9 + 130)         # an old file tailed late: ids 101-105, inside the window
    q._counted = -1e9
    assert q.run({"op": "count", "since": 1.7e9 + 130})["count"] == 20 + 5
    assert q.counts().since_floor(1.7e9 + 130) == 50
    # zones merge oldest first past MAX_ZONES; what they let go unread stays older than the window
    old = sc.MAX_ZONES
    sc.MAX_ZONES = 1
    try:
        c2 = StoreCounts(q, {"host": "l.host", "component": "l.component", "level": "l.level"}, budget=40)
        for _ in range(5):
            c2.refresh()
        assert c2.since_floor(1.7e9 + 120) == 0      # one zone holding the window's lines: nothing skipped
    finally:
        sc.MAX_ZONES = old
    store.close()


def test_counts_and_top_hosts_over_a_window_come_from_the_zones_and_equal_a_full_read(tmp_path, monkeypatch):
    """A count or top_k by host / component / level filtered by those fields and time alone is summed
    from the zones wholly in the window and the store; only the lines not counted yet, the zones
    retention cut into and those the window's edge crosses are read. Each result equals the SQL's."""
    import sqlite3

    import gateway.pipeline.store_counts as sc
    from gateway.pipeline import query_counts

    monkeypatch.setattr(sc, "MAX_ZONES", 4)
    store = Store(tmp_path / "s.db")
    q = QuerySurface(store.path)
    for z in range(6):                                # 6 reads of 20 lines: zones merge down to 4
        _lines(store, ["a", "b", "b", "c"] * 5, t0=1.7e9 + 100 * z)
        q._counted = -1e9
        q.counts()
    zones = q.counts()._zones
    assert len(zones) == 4 and sum(z.lines for z in zones) == 120 and all(z.joint is not None for z in zones)
    _lines(store, ["d"] * 3, t0=1.7e9 + 600)          # stored since the last read: read by the query
    db = sqlite3.connect(store.path)                  # retention: the oldest ids go
    db.execute("DELETE FROM logs WHERE id < 8")
    db.commit()
    db.close()
    read: list[str] = []
    surface_execute = q.execute
    monkeypatch.setattr(q, "execute", lambda sql, args=(): (read.append(sql), surface_execute(sql, args))[1])

    def by_sql(call):
        where, args = q._filters(call)
        return getattr(q, "_" + call["op"])(call, where, args)

    calls = [{"op": "count", "host": "b"}, {"op": "count", "level": ["INFO", "error"]},
             {"op": "count", "host": "d", "last_minutes": 5}, {"op": "top_k", "by": "host", "k": 3},
             {"op": "top_k", "by": "host", "since": 1.7e9 + 250, "until": 1.7e9 + 460},
             {"op": "count", "component": "nothing"}]
    for call in calls:
        assert query_counts.counted_call(call)
        read.clear()
        got, run_read = q.run(call), list(read)
        assert {k: v for k, v in got.items() if k not in ("call", "no_match")} == by_sql(call), call
        assert run_read and all("l.id > ?" in s for s in run_read if "FROM logs l" in s), run_read   # no whole read
    known, ranges = q.counts().split(None, None)
    assert ranges == [(zones[0].lo, zones[0].hi), (120, None)]      # the zone cut into, the new lines
    rows, _ = q.execute("SELECT count(*) FROM logs l WHERE l.id <= ? OR l.id > 120", [zones[0].hi])
    assert sum(known.values()) + rows[0][0] == 123 - 7
    monkeypatch.setattr(sc, "MAX_JOINT", 2)          # zones with more values keep none: their lines are read
    q._counts = None
    assert q.run({"op": "count", "host": "b"})["count"] == by_sql({"op": "count", "host": "b"})["count"]
    assert all(z.joint is None for z in q.counts()._zones) and len(q.counts().split(None, None)[1]) == 1
    assert not query_counts.counted_call({"op": "count", "host": "b", "text": "job"})
    assert not query_counts.counted_call({"op": "top_k", "by": "template"})
    store.close()

"""Store: durable appends with ids, search filters, FTS injection safety, retention, concurrency."""

from __future__ import annotations

import os

import sqlite3
import threading
import time

import pytest

from gateway.ingest.record import LogRecord
from gateway.pipeline.store import Store
from gateway.pipeline.store_read import fts_query


def _rec(text, ts=1000.0, host="line3/plc", sev=6, source="t"):
    return LogRecord(ts=ts, source=source, host=host, severity=sev, text=text)


def _fts_matches_logs(path) -> None:
    """The FTS index holds exactly the rows of `logs` with their texts: FTS5's integrity check with
    rank 1 compares the index with the content table and raises (SQLITE_CORRUPT_VTAB) on any difference."""
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO logs_fts(logs_fts, rank) VALUES ('integrity-check', 1)")


def test_the_fts_check_finds_an_unindexed_row(tmp_path):
    """_fts_matches_logs can fail: a row added behind the writer's back (not indexed) is found."""
    with Store(tmp_path / "s.db") as s:
        s.append([_rec("indexed line")])
    with sqlite3.connect(tmp_path / "s.db") as db:
        db.execute("INSERT INTO logs(ts, source, host, severity, text) VALUES (1, 't', 'h', 6, 'not indexed')")
    with pytest.raises(sqlite3.DatabaseError):
        _fts_matches_logs(tmp_path / "s.db")


def test_append_search_filters(tmp_path):
    with Store(tmp_path / "s.db") as s:
        ids = s.append([_rec("E-STOP pressed at station 4", 1000, sev=2), _rec("cycle 1 complete", 1001),
                        _rec("JAM detected at PE-12", 1002, host="line3/labeler", sev=3),
                        _rec("heater zone 2 over-temperature", 1003, host="line3/filler", sev=4)],
                       template_ids=[7, 8, 9, 10])
        assert ids == [1, 2, 3, 4]
        assert [r["id"] for r in s.search()] == [4, 3, 2, 1]                     # newest first
        assert [r["text"] for r in s.search("e-stop")] == ["E-STOP pressed at station 4"]
        assert [r["id"] for r in s.search("jam zone")] == []                      # all words must occur
        assert [r["id"] for r in s.search("jam")] == [3]
        assert [r["id"] for r in s.search("over-temp*")] == [4]                   # prefix
        assert [r["id"] for r in s.search(severity="warning")] == [4, 3, 1]       # at least as severe
        assert [r["id"] for r in s.search(host="line3/filler")] == [4]
        assert [r["id"] for r in s.search(since=1001, until=1002)] == [3, 2]
        assert [r["id"] for r in s.search(template_id=9)] == [3]
        assert [r["id"] for r in s.search(after_id=2, limit=5)] == [3, 4]         # paging forward
        assert [r["id"] for r in s.search(before_id=3, limit=1)] == [2]
        assert s.get(1) == {"id": 1, "ts": 1000.0, "source": "t", "host": "line3/plc", "peer": "line3/plc",
                            "severity": "critical", "text": "E-STOP pressed at station 4", "template_id": 7}
        with pytest.raises(ValueError, match="limit=0"):
            s.search(limit=0)
        with pytest.raises(ValueError, match="unknown severity"):
            s.search(severity="loud")


@pytest.mark.parametrize("q", ['"', 'AND', 'a OR', 'NEAR(a b', 'text:foo', '^x', '*', '(', ')', "'; DROP TABLE logs; --",
                               'a" OR "b', '\x00', 'e-stop -jam', '"unterminated', 'NOT', '{x y}: z', '+', '中文 日志'])
def test_fts_syntax_in_user_text_is_literal(tmp_path, q):
    with Store(tmp_path / "s.db") as s:
        s.append([_rec("plain line AND more OR text: NEAR foo"), _rec("中文 日志 测试")])
        rows = s.search(q)                     # never raises, whatever the text
        assert isinstance(rows, list)
        assert s.count() == 2
    assert fts_query('a" OR "b') == '"a""" "OR" """b"'


def test_reopen_keeps_ids_and_rows(tmp_path):
    with Store(tmp_path / "s.db") as s:
        s.append([_rec(f"line {i}") for i in range(10)])
    with Store(tmp_path / "s.db") as s:
        assert s.append([_rec("after reopen")]) == [11]
        assert s.count() == 11


def test_retention_deletes_oldest_first(tmp_path, monkeypatch):
    import gateway.pipeline.store as store_mod

    with Store(tmp_path / "s.db", max_bytes=store_mod.MIN_STORE_BYTES) as s:
        s.retention_check_rows = 500
        for b in range(40):
            s.append([_rec(f"batch {b} line {i} " + "payload " * 20) for i in range(250)])
        s.flush()                            # retention runs after an append returns; wait for it
        st = s.stats()
        assert st["retention_deleted"] > 0
        lo, hi = s.id_range()
        assert hi == 40 * 250 and lo == st["retention_deleted"] + 1          # the oldest went first
        assert s.search("batch 39")                                             # newest still there
        assert s.get(1) is None and s.get(lo) is not None
        _fts_matches_logs(tmp_path / "s.db")                   # the deleted rows left the FTS index too


def test_concurrent_appends_are_group_committed(tmp_path):
    with Store(tmp_path / "s.db") as s:
        out: list[list[int]] = []

        def worker(k):
            for j in range(20):
                out.append(s.append([_rec(f"w{k} {j} {i}") for i in range(10)]))

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        all_ids = sorted(i for ids in out for i in ids)
        assert all_ids == list(range(1, 6 * 20 * 10 + 1))
        assert s.count() == 1200
        assert s.stats()["commits"] <= 120      # groups formed (usually far fewer than 120 commits)


def test_flush_waits_for_the_retention_an_append_started(tmp_path, monkeypatch):
    import time

    import gateway.pipeline.store as store_mod

    finished = threading.Event()
    s = Store(tmp_path / "s.db")
    s.retention_check_rows = 1
    real = s._enforce_retention

    def slow_retention(db):
        time.sleep(0.3)                      # a long delete, still running when append returns
        real(db)
        finished.set()

    # patched on this store only: another test's appliance may run a store of its own meanwhile
    monkeypatch.setattr(s, "_enforce_retention", slow_retention)
    assert s.append([_rec("one line")]) == [1]
    assert not finished.is_set()             # the append was acknowledged before retention ran
    s.flush()
    assert finished.is_set()
    assert s.append([_rec("after flush")]) == [2]     # the barrier took no id
    s.close()
    with pytest.raises(store_mod.StoreClosed):
        s.flush()


def test_flush_queued_behind_an_append_waits_for_its_retention(tmp_path, monkeypatch):
    """The barrier can share a write batch with appends queued before it (other threads'); it is
    released only after the retention pass that batch starts."""
    import time

    passes = []
    with Store(tmp_path / "s.db") as s:
        s.retention_check_rows = 1
        real = s._enforce_retention

        def slow_retention(db):
            time.sleep(0.3)
            real(db)
            passes.append(time.monotonic())

        monkeypatch.setattr(s, "_enforce_retention", slow_retention)   # this store only
        s.append([_rec("first")])             # its retention pass keeps the writer busy for 0.3 s
        other = threading.Thread(target=s.append, args=([_rec("second")],))
        other.start()
        while s._queue.qsize() < 1:          # the second append waits in the queue
            time.sleep(0.001)
        s.flush()                            # queued behind it: the same batch
        assert len(passes) == 2              # both retention passes ran before flush returned
        other.join()


# --- structured fields ---------------------------------------------------------------------------

def test_fields_and_params_round_trip(tmp_path):
    from gateway.pipeline.fields import LineFields
    f = LineFields(time=1500.5, time_text="2024-05-01 10:00:05", host="plc7", component="line3.heater", pid=42,
                   level="warning", template="zone <NUM> temperature <*>", params=[("2", 2.0, "zone"), ("92.4C", 92.4)])
    with Store(tmp_path / "s.db") as s:
        ids = s.append([_rec("zone 2 temperature 92.4C", 2000), _rec("no fields", 2001)], template_ids=[5, None],
                       fields=[f, None])
        got = s.fields(ids[0])
        assert got == {"time": 1500.5, "time_text": "2024-05-01 10:00:05", "line_host": "plc7",
                       "component": "line3.heater", "pid": 42, "level": "warning", "template_id": 5,
                       "template": "zone <NUM> temperature <*>",
                       "params": [{"pos": 0, "text": "2", "num": 2.0, "name": "zone"},
                                  {"pos": 1, "text": "92.4C", "num": 92.4, "name": None}]}
        plain = s.fields(ids[1])
        assert plain["time"] == 2001 and plain["component"] is None and plain["params"] == []
        assert s.fields(999) is None
        assert s.get(ids[0])["text"] == "zone 2 temperature 92.4C"
        # one meaning of host for every reader: the line's own (its header's), the transport's kept as peer
        assert (s.get(ids[0])["host"], s.get(ids[0])["peer"]) == ("plc7", "line3/plc")
        assert [r["id"] for r in s.search(host="plc7")] == [ids[0]]
        assert [r["id"] for r in s.search(host="line3/plc")] == [ids[1]]
        assert [r["id"] for r in s.search(peer="line3/plc")] == [ids[1], ids[0]]
        with s.reader.connection() as db:
            assert db.execute("SELECT max(num) FROM params p JOIN logs l ON l.id = p.line_id "
                              "WHERE l.template_id = 5 AND p.pos = 1").fetchone()[0] == 92.4
        with pytest.raises(ValueError, match="fields"):
            s.append([_rec("x", 1)], fields=[f, f])


def test_a_templates_first_lines_get_the_parameters_it_gained(tmp_path):
    """A template's first line was stored when the template was its own text (no <*>), so without
    parameters; once the template has <*> there, that line gets them too: a `where circuit = B` finds it."""
    from gateway.pipeline.fields import LineFields
    head = "#0753 20261204T104659.585 press-07 <EMERG> SAFE: "
    lit, gen = "EMERGENCY STOP circuit B discrepancy, press locked", "EMERGENCY STOP circuit <*> discrepancy, press locked"
    with Store(tmp_path / "s.db") as s:
        first = s.append([_rec(head + lit, 1)], [7], [LineFields(template=lit, params=[])])[0]
        later = s.append([_rec(head + "EMERGENCY STOP circuit A discrepancy, press locked", 2)], [7],
                         [LineFields(template=gen, params=[("A", None, "circuit")])])[0]
        assert s.fields(first)["params"] == [{"pos": 0, "text": "B", "num": None, "name": "circuit"}]
        assert s.fields(later)["params"] == [{"pos": 0, "text": "A", "num": None, "name": "circuit"}]
        s.append([_rec("other", 3)], [8], [LineFields(template="other", params=[])])   # an unchanged one: nothing
        assert s.fields(first)["params"][0]["text"] == "B"


def test_retention_deletes_params(tmp_path):
    from gateway.pipeline.fields import LineFields
    import gateway.pipeline.store as store_mod
    with Store(tmp_path / "s.db", max_bytes=store_mod.MIN_STORE_BYTES) as s:
        s.retention_check_rows = 500
        filler = "x" * 400
        for b in range(12):
            recs = [_rec(f"reading {b}-{i} {filler}", b * 1000 + i) for i in range(500)]
            s.append(recs, [1] * 500, [LineFields(params=[(str(i), float(i)), ("v", None)]) for i in range(500)])
        s.flush()
        lo = s.id_range()[0]
        assert s.stats()["retention_deleted"] > 0 and lo > 1 and s.stats()["first_id"] == lo
        with s.reader.connection() as db:
            assert db.execute("SELECT count(*) FROM params WHERE line_id < ?", (lo,)).fetchone()[0] == 0
            assert db.execute("SELECT count(*) FROM params").fetchone()[0] == 2 * s.count()


def test_old_store_is_migrated_without_losing_lines(tmp_path):
    import sqlite3
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.executescript("""
    CREATE TABLE logs(id INTEGER PRIMARY KEY AUTOINCREMENT, ts REAL NOT NULL, source TEXT NOT NULL,
      host TEXT NOT NULL, severity INTEGER NOT NULL, text TEXT NOT NULL, template_id INTEGER);
    CREATE INDEX logs_ts ON logs(ts);
    CREATE INDEX logs_template ON logs(template_id);
    CREATE VIRTUAL TABLE logs_fts USING fts5(text, content='logs', content_rowid='id');
    CREATE TRIGGER logs_ai AFTER INSERT ON logs BEGIN
      INSERT INTO logs_fts(rowid, text) VALUES (new.id, new.text);
    END;
    CREATE TRIGGER logs_ad AFTER DELETE ON logs BEGIN
      INSERT INTO logs_fts(logs_fts, rowid, text) VALUES ('delete', old.id, old.text);
    END;""")
    db.executemany("INSERT INTO logs(ts, source, host, severity, text, template_id) VALUES (?,?,?,?,?,?)",
                   [(1000.0 + i, "t", "h", 6, f"old line {i}", 3) for i in range(5)])
    db.commit()
    db.close()
    with Store(path) as s:
        assert s.count() == 5 and [r["text"] for r in s.search("old")][-1] == "old line 0"
        assert s.fields(1)["time"] == 1000.0 and s.fields(1)["component"] is None
        ids = s.append([_rec("new line", 2000)])
        assert ids == [6] and s.count() == 6
        assert [r["id"] for r in s.search("line")] == [6, 5, 4, 3, 2, 1]     # old rows and new ones
    with Store(path) as s:                                    # reopening a migrated store is a no-op
        assert s.count() == 6
        s.append([_rec("newer line", 2001)])
    with sqlite3.connect(path) as db:         # the per-row triggers are gone: the writer keeps the index
        assert db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall() == []
    _fts_matches_logs(path)


def test_readers_are_pooled_across_threads(tmp_path):
    """Threads that come and go (a server's worker pool) share the MAX_READERS connections opened with
    the store: none is added per thread, none is closed after a burst (its caches are dropped
    instead), so the process's fds stay as they were at start; close() closes them all (issue 30)."""
    import math
    import threading
    import gateway.pipeline.store_read as store_mod
    s = Store(tmp_path / "s.db")

    def db_fds():                         # this store's files (db, -wal, -shm) among the process's fds
        return sum(os.path.realpath(f"/proc/self/fd/{fd}").startswith(str(tmp_path / "s.db"))
                   for fd in os.listdir("/proc/self/fd"))

    fds = db_fds()
    assert s.stats()["read_connections"] == store_mod.MAX_READERS
    s.append([_rec(f"line {i}", i) for i in range(10)])
    for _ in range(5):
        ts = [threading.Thread(target=lambda: s.search("line", limit=5)) for _ in range(12)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert s.stats()["read_connections"] == store_mod.MAX_READERS
    together = threading.Barrier(3)

    def hold():
        with s.reader.connection() as db:
            together.wait(10)             # three readers at once: three pooled connections
            db.execute("SELECT 1")

    ts = [threading.Thread(target=hold) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(s.reader._idle) == s.stats()["read_connections"] == store_mod.MAX_READERS
    assert db_fds() == fds
    # after a quiet spell the next reader drops the idle connections' caches and keeps them open
    s.reader._idle = type(s.reader._idle)((db, t - store_mod.READER_IDLE_S - 1) for db, t in s.reader._idle)
    s.search("line", limit=1)
    assert s.stats()["read_connections"] == store_mod.MAX_READERS
    assert sum(t == math.inf for _, t in s.reader._idle) >= store_mod.MAX_READERS - 1
    s.close()
    assert s.stats()["read_connections"] == 0


def test_a_bad_append_fails_alone_in_its_group_commit(tmp_path):
    """One append SQLite refuses (a lone surrogate that got past the edge) shares a group commit
    with other callers' appends: the group is split, the others commit, the bad one is named."""
    with Store(tmp_path / "s.db") as s:
        s.append([_rec("warm-up")])
        blocker = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")           # the writer waits behind this lock ...
        results: dict[str, object] = {}

        def append(name, recs):
            try:
                results[name] = s.append(recs)
            except Exception as exc:               # noqa: BLE001 - the test inspects it
                results[name] = exc

        first = threading.Thread(target=append, args=("first", [_rec("first")]))
        first.start()
        _wait(lambda: s.stats()["queued"] == 0)     # the writer took `first` and is blocked on it
        threads = [threading.Thread(target=append, args=(name, recs)) for name, recs in
                   [("good1", [_rec("good 1a"), _rec("good 1b")]), ("bad", [_rec("fine"), _rec("a\ud800b")]),
                    ("good2", [_rec("good 2")])]]
        for t in threads:
            t.start()
        _wait(lambda: s.stats()["queued"] == 3)     # ... so these three queue up and form one group
        blocker.execute("ROLLBACK")
        blocker.close()
        for t in [first, *threads]:
            t.join(10)
        assert isinstance(results["bad"], ValueError)
        assert "line 1 of the append: its text is not valid Unicode" in str(results["bad"])
        texts = sorted(r["text"] for r in s.search(limit=20))
        assert texts == sorted(["warm-up", "first", "good 1a", "good 1b", "good 2"])
        for name in ("good1", "good2"):
            assert [s.get(i)["text"] for i in results[name]][0].startswith("good")
        st = s.stats()
        assert st["commit_retries"] >= 1 and st["commit_failures"] == 1 and st["lines_written"] == 5
        assert s.append([_rec("after")]) == [max(r["id"] for r in s.search(limit=20))]   # ids continue
        assert sorted(r["text"] for r in s.search("good")) == ["good 1a", "good 1b", "good 2"]
        _fts_matches_logs(tmp_path / "s.db")          # nothing of the rolled-back group stayed indexed


def _wait(cond, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_keyed_lines_are_stored_once(tmp_path):
    """A record marked may_repeat whose identity is stored already is not stored again (its id is the
    stored line's); a first delivery (may_repeat False) is always stored; repeats in one group too."""
    with Store(tmp_path / "s.db") as s:
        ids = s.append([_rec("a"), _rec("b")], keys=[("k1", False), ("k2", False)])
        again = s.append([_rec("a"), _rec("c"), _rec("c")], keys=[("k1", True), ("k3", False), ("k3", True)])
        assert again[0] == ids[0] and again[2] == again[1]
        same_key_fresh = s.append([_rec("a")], keys=[("k1", False)])     # not a redelivery: stored
        assert same_key_fresh[0] not in ids
        assert sorted(r["text"] for r in s.search()) == ["a", "a", "b", "c"]
        assert s.stats()["repeats_skipped"] == 2 and s.stats()["lines_written"] == 4
        assert len(s.search("c")) == 1                 # a skipped repeat is not indexed either
        _fts_matches_logs(tmp_path / "s.db")


def test_a_full_store_refuses_with_store_full_and_recovers(tmp_path):
    """SQLITE_FULL (here from the page limit, as from a full disk): StoreFull, nothing stored,
    earlier lines intact; the same append succeeds once there is room again."""
    from gateway.pipeline.store import StoreFull
    with Store(tmp_path / "s.db") as s:
        s.append([_rec("before")])
        s.flush()                                  # the writer is idle: its connection can be set
        pages = s._writer_db.execute("PRAGMA page_count").fetchone()[0]
        s._writer_db.execute(f"PRAGMA max_page_count={pages}")
        big = [_rec(f"row {i} " + "x" * 2000) for i in range(200)]
        with pytest.raises(StoreFull, match="is full"):
            s.append(big)
        assert [r["text"] for r in s.search()] == ["before"]
        s._writer_db.execute("PRAGMA max_page_count=1073741823")
        ids = s.append(big)
        assert len(ids) == 200 and s.count() == 201

"""Store: durable appends with ids, search filters, FTS injection safety, retention, concurrency."""

from __future__ import annotations

import threading

import pytest

from gateway.ingest.record import LogRecord
from gateway.pipeline.store import Store, fts_query


def _rec(text, ts=1000.0, host="line3/plc", sev=6, source="t"):
    return LogRecord(ts=ts, source=source, host=host, severity=sev, text=text)


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
        assert s.get(1) == {"id": 1, "ts": 1000.0, "source": "t", "host": "line3/plc", "severity": "critical",
                            "text": "E-STOP pressed at station 4", "template_id": 7}
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

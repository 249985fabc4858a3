"""Triage under hostile input (issue 30): bounded matching, the per-source template cap and its
overflow template, the work budget, the one-line lock scope, and close() during classification."""

from __future__ import annotations

import csv
import random
import threading

import pytest
from drain3 import TemplateMiner
from drain3.drain import Drain

import gateway.pipeline.templates as templates
import gateway.pipeline.triage as triage_mod
from gateway.ingest.record import LogRecord
from gateway.pipeline.triage import Triage, TriageClosed, miner_config


def _hostile(n: int, seed: int = 1, source: str = "http") -> list[LogRecord]:
    rng = random.Random(seed)
    return [LogRecord(1000.0 + i, source, "", 6, f"u{rng.randrange(10**6)} v{rng.randrange(10**6)} "
                                                  f"k{rng.randrange(10**6)}") for i in range(n)]


def _count_comparisons(monkeypatch) -> list[int]:
    calls = [0]
    real = Drain.get_seq_distance

    def counted(self, seq1, seq2, include_params):
        calls[0] += 1
        return real(self, seq1, seq2, include_params)

    monkeypatch.setattr(Drain, "get_seq_distance", counted)
    return calls


def test_matching_work_does_not_grow_with_templates(monkeypatch):
    """Comparisons per line stay under MAX_COMPARED however many templates exist; a line sharing no
    token position with any template costs none (a few share one by chance: Drain compared each of
    these 2,000 lines with every template of the leaf)."""
    calls = _count_comparisons(monkeypatch)
    t = Triage(None, find_headers=False)
    t.classify(_hostile(3000))
    calls[0] = 0
    t.classify(_hostile(2000, seed=2))
    assert calls[0] < 50
    # lines of a shape with shared tokens: each compared with at most MAX_COMPARED templates
    recs = [LogRecord(0, "plc", "", 6, f"station {i} motor m{i} fault code c{i * 7}") for i in range(3000)]
    calls[0] = 0
    t.classify(recs)
    assert calls[0] <= len(recs) * templates.MAX_COMPARED


@pytest.mark.parametrize("system", ["HDFS", "OpenSSH", "Linux"])
def test_indexed_match_is_drains_own(loghub_dir, system, monkeypatch):
    """Below the caps, the indexed leaf search gives Drain3's templates, line for line (with the
    proven-word rule, which is ours, off)."""
    monkeypatch.setattr(templates, "PROVEN_SIZE", 10**9)
    with open(loghub_dir / system / f"{system}_2k.log_structured.csv", encoding="utf-8") as f:
        lines = [r["Content"] for r in csv.DictReader(f)]
    plain = TemplateMiner(None, miner_config())
    want = [plain.add_log_message(x)["cluster_id"] for x in lines]
    t = Triage(None, find_headers=False)
    got = [c.template_id for c in t.classify([LogRecord(0, "t", "", 6, x) for x in lines])]
    assert got == want


def test_template_cap_per_source_and_overflow(monkeypatch):
    monkeypatch.setattr(templates, "MAX_SOURCE_TEMPLATES", 40)
    t = Triage(None, find_headers=False)
    recs = [LogRecord(0, "dev", "", 6, f"word{i} another{i} thing{i}") for i in range(300)]
    recs += [LogRecord(0, "other", "", 6, "pump started")]
    cl = t.classify(recs)
    alerts = t.evaluate(recs, list(range(1, len(recs) + 1)), cl)
    s = t.stats()
    assert s["templates_by_source"] == {"dev": 40, "other": 1}
    assert s["overflow_lines"] == {"dev": 260}
    over = {c.template_id for c in cl if c.overflow}
    assert len(over) == 1 and t.template(over.pop()) == templates.OVERFLOW_TEMPLATE
    assert [a.kind for a in alerts].count("template_overflow") == 1     # alerted once
    assert len(cl) == len(recs) and all(c.fields is not None for c in cl)


def test_work_budget_stores_lines_unmined(monkeypatch):
    monkeypatch.setattr(triage_mod, "CALL_BUDGET_S", 0.0)
    t = Triage(None)
    recs = _hostile(100)
    cl = t.classify(recs)
    assert len(cl) == 100 and all(c.overflow for c in cl)
    assert t.stats()["unmined_lines"] == 100 and t.stats()["templates_by_source"] == {}


def test_lock_is_free_between_lines_and_close_stops_classification():
    t = Triage(None)
    seen, free = [0], []
    real = t.headers.parse

    def parse(line, source="", year=None):
        seen[0] += 1
        if seen[0] in (50, 500):
            free.append(t._lock.acquire(blocking=False))      # another caller could take it now
            t._lock.release() if free[-1] else None
        if seen[0] == 500:
            closer = threading.Thread(target=t.close)
            closer.start()
            closer.join(5)
            free.append(not closer.is_alive())                # close() did not wait for the batch
        return real(line, source, year)

    t.headers.parse = parse
    with pytest.raises(TriageClosed):
        t.classify(_hostile(5000))
    assert free == [True, True, True] and seen[0] < 600


def test_stats_is_a_snapshot_readable_while_the_lock_is_held():
    t = Triage(None)
    t.classify(_hostile(10))
    with t._lock:
        assert t.stats()["lines"] == 10


def test_ids_are_never_reused_after_a_lost_snapshot(tmp_path):
    t = Triage(tmp_path)
    first = t.classify([LogRecord(0, "s", "", 6, "valve opened")])[0]
    t._last_save = float("inf")                               # later snapshots are throttled away
    second = t.classify([LogRecord(0, "s", "", 6, "conveyor stopped abruptly")])[0]
    assert second.is_new and second.template_id > first.template_id
    t2 = Triage(tmp_path)                                     # "crash": the second template is lost
    third = t2.classify([LogRecord(0, "s", "", 6, "heater zone failure")])[0]
    assert third.is_new and third.template_id > second.template_id


def test_a_value_first_token_joins_and_a_proven_event_word_does_not():
    t = Triage(None, find_headers=False)
    users = ["admin", "alice", "bob", "carol"]
    got = t.classify([LogRecord(0, "p", "", 6, f"{u} acknowledged alarm {i}") for i, u in enumerate(users)])
    assert len({c.template_id for c in got}) == 1                  # the first token is a value
    fails = t.classify([LogRecord(0, "s", "", 6, f"Failed password for u{i} port {i}") for i in range(12)])
    ok = t.classify([LogRecord(0, "s", "", 6, "Accepted password for u1 port 7")])
    assert ok[0].template_id != fails[0].template_id              # "Failed" held in 12 lines: the event's word

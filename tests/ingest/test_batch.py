"""Batcher: a line the sink refuses is lost alone, never with the lines batched around it."""

from __future__ import annotations

from gateway.ingest.batch import Batcher
from gateway.ingest.record import LogRecord, SourceCounters


def test_a_refused_line_does_not_take_its_batch_with_it():
    stored: list[str] = []

    def sink(records):
        if any(r.text == "poison" for r in records):
            raise ValueError("line refused")
        stored.extend(r.text for r in records)
        return list(range(len(records)))

    counters = SourceCounters()
    b = Batcher(sink, counters, "t", max_batch=64, max_delay_s=0.2)
    texts = [f"line {i}" for i in range(50)]
    texts.insert(17, "poison")
    for t in texts:
        b.put(LogRecord(1.0, "t", "h", 6, t))
    b.start()
    assert b.flush(10)
    b.stop()
    assert stored == [t for t in texts if t != "poison"]
    assert counters.get("t", "sink_errors") == 1 and counters.get("t", "lines") == 50


def test_a_failing_sink_is_retried_until_it_takes_the_batch():
    """The store's disk is full for a while: the batch waits and is retried (back-off), nothing is
    dropped, and each record is settled as stored once it is."""
    calls, stored, settled = [], [], []

    def sink(records):
        calls.append(len(records))
        if len(calls) <= 3:
            raise OSError("database or disk is full")
        stored.extend(r.text for r in records)
        return list(range(len(records)))

    counters = SourceCounters()
    b = Batcher(sink, counters, "t", max_batch=64, max_delay_s=0.2)
    for i in range(10):
        b.put(LogRecord(1.0, "t", "h", 6, f"line {i}"), done=settled.append)
    b.start()
    assert b.flush(10)
    b.stop()
    assert stored == [f"line {i}" for i in range(10)] and settled == [True] * 10
    assert counters.get("t", "sink_retries") == 3 and counters.get("t", "sink_errors") == 0

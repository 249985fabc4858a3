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

"""Batcher: sources that receive one line at a time (syslog, MQTT) hand records here; a flusher
thread passes them to the sink in batches, so one durable commit covers many lines.

Knows nothing about transports or the store; the queue is bounded, its depth and drops exported.
"""

from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass
from typing import Any, Callable

from gateway.ingest.record import LogRecord, SourceCounters

log = logging.getLogger(__name__)

MAX_BATCH = 2_000            # records per sink call
MAX_DELAY_S = 0.05           # a record waits at most this long for company
MAX_PENDING = 100_000        # bounded memory; beyond it put() blocks (block=True) or drops and counts
RETRY_FIRST_S, RETRY_MAX_S = 0.1, 5.0   # back-off while the sink fails as a whole (disk full)

# A record's identity for the store's duplicate check: (key, may_repeat). Only a record that may be a
# redelivery (an MQTT message with its DUP flag) is looked up; every keyed record is remembered.
DedupeKey = tuple[str, bool]
# Called once the record is settled: True when it is stored (or refused alone as bad input, so that
# a redelivery would be refused again), False when the sink failed (disk full, store closed).
Done = Callable[[bool], None]


def take_batch(q: queue.Queue, wait_s: float, limit: int,
               size: Callable[[Any], int] = lambda item: 1) -> tuple[list, bool]:
    """The next batch from a queue whose None means stop: the first item (waiting for it), then those that
    arrive within wait_s of each other (0: those already queued) until the sizes reach `limit`.
    Returns (batch, stop); the batch is empty when the first item is None. Shared by the batcher here and
    the store's writer thread (gateway/pipeline/store.py)."""
    first = q.get()
    if first is None:
        return [], True
    batch, n = [first], size(first)
    while n < limit:
        try:
            nxt = q.get(timeout=wait_s)
        except queue.Empty:
            return batch, False
        if nxt is None:
            return batch, True
        batch.append(nxt)
        n += size(nxt)
    return batch, False


@dataclass(slots=True)
class _Item:
    rec: LogRecord
    key: DedupeKey | None
    done: Done | None


class Batcher:
    """sink(records) -> ids, or sink(records, keys) -> ids when `keyed` (keys: DedupeKey | None each)."""

    def __init__(self, sink: Callable[..., list[int]], counters: SourceCounters, source: str,
                 max_batch: int = MAX_BATCH, max_delay_s: float = MAX_DELAY_S, keyed: bool = False,
                 max_pending: int = MAX_PENDING) -> None:
        self.sink, self.counters, self.source = sink, counters, source
        self.max_batch, self.max_delay_s, self.keyed = max_batch, max_delay_s, keyed
        self.max_pending = max_pending
        self._q: queue.Queue[_Item | None] = queue.Queue(max_pending)
        self._thread = threading.Thread(target=self._run, name=f"batch-{source}", daemon=True)
        self._idle = threading.Event()
        self._idle.set()
        self._stopping = threading.Event()
        self.dropped = 0             # records refused because the queue was full (block=False)

    def start(self) -> None:
        self._thread.start()

    def put(self, rec: LogRecord, *, key: DedupeKey | None = None, done: Done | None = None,
            block: bool = False) -> bool:
        """Queue `rec`. A full queue blocks the caller when `block` (TCP: stop reading, the sender
        feels back-pressure); else the record is dropped and counted. Returns whether it was queued."""
        self._idle.clear()
        item = _Item(rec, key, done)
        if block:
            self._q.put(item)
            return True
        try:
            self._q.put_nowait(item)
            return True
        except queue.Full:
            self.dropped += 1
            self.counters.add(self.source, "overflow")
            return False

    def stats(self) -> dict:
        return {"depth": self._q.qsize(), "max": self.max_pending, "dropped": self.dropped}

    def stop(self) -> None:
        """Flush what is queued, then end the thread (a sink still failing then fails it, counted)."""
        self._stopping.set()
        self._q.put(None)
        self._thread.join(10)

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until everything queued so far reached the sink (tests, shutdown)."""
        return self._idle.wait(timeout)

    def _deliver(self, items: list[_Item]) -> None:
        """Hand `items` to the sink. A ValueError (a line refused as bad input) splits the batch in
        halves, each retried, so the refused line is lost alone (sink_errors), never its neighbours.
        Any other failure (disk full) is retried with back-off, the queue filling behind it (TCP
        back-pressure, MQTT unacknowledged), until it succeeds or the Batcher stops."""
        records = [i.rec for i in items]
        delay = RETRY_FIRST_S
        while True:
            try:
                return self._deliver_once(items, records)
            except Exception as exc:
                if self._stopping.is_set():
                    self.counters.add(self.source, "sink_errors", len(items))
                    log.warning("%s: ingest of %d lines failed at stop: %s", self.source, len(items), exc)
                    for i in items:
                        if i.done is not None:
                            i.done(False)
                    return
                self.counters.add(self.source, "sink_retries")
                log.warning("%s: ingest of %d lines failed, retrying in %.1f s: %s", self.source, len(items),
                            delay, exc)
                self._stopping.wait(delay)
                delay = min(delay * 2, RETRY_MAX_S)

    def _deliver_once(self, items: list[_Item], records: list[LogRecord]) -> None:
        try:
            if self.keyed:
                self.sink(records, [i.key for i in items])
            else:
                self.sink(records)
            self.counters.add(self.source, "lines", len(items))
        except ValueError as exc:
            if len(items) > 1:
                half = len(items) // 2
                self._deliver(items[:half])
                self._deliver(items[half:])
                return
            self.counters.add(self.source, "sink_errors")
            log.warning("%s: a line was refused: %s", self.source, exc)
        for i in items:
            if i.done is not None:
                i.done(True)

    def _run(self) -> None:
        stop = False
        while not stop:
            batch, stop = take_batch(self._q, self.max_delay_s, self.max_batch)
            if batch:
                self._deliver(batch)
            if self._q.empty():
                self._idle.set()
        self._idle.set()

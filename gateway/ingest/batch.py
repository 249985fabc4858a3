"""Batcher: sources that receive one line at a time (syslog, MQTT) hand records here; a flusher
thread passes them to the sink in batches, so one durable commit covers many lines.

Knows nothing about transports or the store; the queue is bounded and overflow is counted.
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Callable

from gateway.ingest.record import LogRecord, SourceCounters

log = logging.getLogger(__name__)

MAX_BATCH = 2_000            # records per sink call
MAX_DELAY_S = 0.05           # a record waits at most this long for company
MAX_PENDING = 100_000        # bounded memory; beyond it records are refused and counted


class Batcher:
    def __init__(self, sink: Callable[[list[LogRecord]], list[int]], counters: SourceCounters, source: str,
                 max_batch: int = MAX_BATCH, max_delay_s: float = MAX_DELAY_S) -> None:
        self.sink, self.counters, self.source = sink, counters, source
        self.max_batch, self.max_delay_s = max_batch, max_delay_s
        self._q: queue.Queue[LogRecord | None] = queue.Queue(MAX_PENDING)
        self._thread = threading.Thread(target=self._run, name=f"batch-{source}", daemon=True)
        self._idle = threading.Event()
        self._idle.set()

    def start(self) -> None:
        self._thread.start()

    def put(self, rec: LogRecord) -> None:
        try:
            self._idle.clear()
            self._q.put_nowait(rec)
        except queue.Full:
            self.counters.add(self.source, "overflow")

    def stop(self) -> None:
        """Flush what is queued, then end the thread."""
        self._q.put(None)
        self._thread.join(10)

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until everything queued so far reached the sink (tests, shutdown)."""
        return self._idle.wait(timeout)

    def _deliver(self, batch: list[LogRecord]) -> None:
        """Hand `batch` to the sink; if it fails, split it in halves and retry each, so a line the
        sink refuses is lost alone (counted as sink_errors), never with the lines around it."""
        try:
            self.sink(batch)
            self.counters.add(self.source, "lines", len(batch))
            return
        except Exception as exc:
            if len(batch) == 1:
                self.counters.add(self.source, "sink_errors")
                log.warning("%s: ingest of a line failed: %s", self.source, exc)
                return
        half = len(batch) // 2
        self._deliver(batch[:half])
        self._deliver(batch[half:])

    def _run(self) -> None:
        stop = False
        while not stop:
            first = self._q.get()
            if first is None:
                break
            batch = [first]
            while len(batch) < self.max_batch:
                try:
                    nxt = self._q.get(timeout=self.max_delay_s)
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
            self._deliver(batch)
            if self._q.empty():
                self._idle.set()
        self._idle.set()

"""The box's shipper: its store's lines (and its alerts) go to the fleet's ClickHouse in batches, after a
persisted cursor, at least once. The cursor moves only after ClickHouse acknowledged the INSERT, so a kill
at any point re-sends at most one batch, which the server's ReplacingMergeTree (box, id) absorbs
(gateway/fleet/schema.py). While no server answers, it waits (1 s doubling up to backoff_max_s) and the
store keeps the lines: retention stops at the cursor (`keep_from`) unless more than max_unshipped_lines wait;
those it deletes anyway are counted (`dropped_unshipped`). Knows nothing about how lines got into the store.

A line sent again is marked: `resent` is 1 on every line whose id is at most the highest id any earlier
attempt may have sent (a failed or unacknowledged INSERT, a run before a kill). The cursor file keeps that
bound (`sent_hi`, saved before an INSERT goes beyond it, a batch ahead with each acknowledgement), and the
INSERT is sent once (ClickHouseHttp.query's `once`: no layer resends it unmarked). So a line has two copies
only if one of them says `resent`, and the fleet node counts the lines with no such copy as rows
(gateway/fleet/node/sql.py).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

from gateway.fleet.client import ClickHouseError, ClickHouseHttp, Unreachable
from gateway.fleet.schema import ALERTS, LINES, insert_lines_sql
from gateway.fleet.settings import FleetSettings
from gateway.fleet.source import AlertSource, StoreSource

log = logging.getLogger(__name__)

BACKOFF_MIN_S = 1.0
MAX_OPEN_ALERTS = 1_000          # alerts re-shipped until their explanation is settled
ALERTS_PER_PASS = 1_000
PENDING = "pending"              # gateway/pipeline/alerts.py explanation_status of an unsettled alert
# ClickHouse error codes that refuse the data itself (parse and type errors), not a server's state
DATA_ERRORS = frozenset({6, 25, 26, 27, 38, 41, 53, 69, 70, 72, 117, 130, 131, 349})


class Cursor:
    """What has been acknowledged, kept in one JSON file replaced atomically (write, fsync, rename)."""

    def __init__(self, path: Path, box_id: str) -> None:
        self.path = path
        self.box_id = box_id
        self.line_id = 0             # the last line id acknowledged
        self.alert_id = 0            # the last alert id acknowledged
        self.open_alerts: list[int] = []
        self.shipped = 0             # lines acknowledged, all runs
        self.dropped_unshipped = 0   # lines retention deleted before they were shipped
        self.rejected = 0            # lines ClickHouse refused alone (skipped)
        self.sent_hi: int | None = 0      # no line above this id was ever sent (None: a cursor from before it)
        if path.exists():
            self.sent_hi = None
            d = json.loads(path.read_text(encoding="utf-8"))
            if d.get("box_id") != box_id:
                raise ValueError(f"{path} is the cursor of box {d.get('box_id')!r}, not {box_id!r}: this store "
                                 "was shipped under another fleet.box_id (remove the file to ship it again)")
            for k in ("line_id", "alert_id", "open_alerts", "shipped", "dropped_unshipped", "rejected", "sent_hi"):
                setattr(self, k, d.get(k, getattr(self, k)))

    def save(self) -> None:
        d = {"box_id": self.box_id, "line_id": self.line_id, "alert_id": self.alert_id,
             "open_alerts": self.open_alerts, "shipped": self.shipped, "dropped_unshipped": self.dropped_unshipped,
             "rejected": self.rejected, "sent_hi": self.sent_hi}
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(d, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class Shipper:
    """start() / stop(); ship_once() -> lines acknowledged (raises on failure); figures() -> dict;
    keep_from(last_id) -> the lowest line id the store's retention must keep."""

    def __init__(self, settings: FleetSettings, store_path: str | Path, alerts_path: str | Path | None = None,
                 cursor_path: str | Path | None = None, client: ClickHouseHttp | None = None) -> None:
        if not settings.enabled:
            raise ValueError("fleet.urls is empty: nothing to ship to")
        if not settings.box_id:
            raise ValueError("fleet.box_id is empty: set this box's id in the plant to ship")
        self.settings = settings
        store_path = Path(store_path)
        self.cursor = Cursor(Path(cursor_path) if cursor_path else store_path.parent / "fleet_cursor.json",
                             settings.box_id)
        self.lines = StoreSource(store_path, settings.box_id)
        self.alerts = AlertSource(alerts_path, settings.box_id) if alerts_path else None
        self.client = client or ClickHouseHttp(settings.urls, settings.user, settings.password, settings.timeout_s)
        self._insert_settings = {"insert_distributed_sync": 1} if settings.cluster else {}
        c = self.cursor
        if c.sent_hi is None:                # a cursor written before sent_hi: at most a batch was in flight
            c.sent_hi = c.line_id + settings.batch_lines
        self._maybe_sent = c.sent_hi         # lines up to this id may be in ClickHouse already: sent as resent
        self.backoff_min_s = BACKOFF_MIN_S
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._last_id: int | None = None     # the store's newest id after the last pass
        self._oldest_ts: float | None = None  # the arrival of the first line not shipped then
        self.batches = 0
        self.failures = 0                    # passes that failed (each followed by a backoff wait)
        self.alerts_shipped = 0
        self.last_error: str | None = None
        self.last_error_at: float | None = None
        self.last_ship_at: float | None = None
        self.backoff_s = 0.0                 # the current wait after failures; 0 while shipping works

    # --- the loop ------------------------------------------------------------------------------
    def start(self) -> "Shipper":
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="fleet-shipper", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            if self._thread.is_alive():           # an INSERT may still be on its way: the bound stays ahead
                self._thread = None
                self._close()
                return
            self._thread = None
        if self.cursor.sent_hi != self._maybe_sent:   # nothing in flight: the next run marks only what was sent
            self.cursor.sent_hi = self._maybe_sent
            self.cursor.save()
        self._close()

    def _close(self) -> None:
        self.lines.close()
        if self.alerts is not None:
            self.alerts.close()
        self.client.close()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                n = self.ship_once()
            except (Unreachable, ClickHouseError, OSError) as exc:
                with self._lock:
                    self.failures += 1
                    self.last_error = str(exc)[:500]
                    self.last_error_at = time.time()
                    self.backoff_s = min(self.settings.backoff_max_s, max(self.backoff_min_s, 2 * self.backoff_s))
                log.warning("fleet: shipping failed (next try in %.0f s): %s", self.backoff_s, self.last_error)
                self._refresh()
                self._stop.wait(self.backoff_s)
                continue
            except Exception:        # a bug: keep the thread, say so, try again later
                log.exception("fleet: shipper pass failed")
                self._stop.wait(self.settings.backoff_max_s)
                continue
            self.backoff_s = 0.0
            if n < self.settings.batch_lines:
                self._stop.wait(self.settings.interval_s)

    def ship_once(self) -> int:
        """One pass: the next batch of lines, then new and open alerts. Returns the lines acknowledged."""
        c = self.cursor
        first, _ = self.lines.id_range()
        if first is not None and c.line_id < first - 1:       # retention got there first (the cap)
            lost = first - 1 - c.line_id
            log.warning("fleet: %d lines were deleted by retention before they were shipped", lost)
            c.dropped_unshipped += lost
            c.line_id = first - 1
            c.save()
        n = self._ship_lines()
        self._ship_alerts()
        self._refresh()
        return n

    def _refresh(self) -> None:
        """The store's newest id and its first unshipped line's arrival, for figures()."""
        self._last_id = self.lines.id_range()[1]
        self._oldest_ts = self.lines.first_ts_after(self.cursor.line_id)

    def _ship_lines(self) -> int:
        """The next batch; one the server refuses as data (not as an outage) is halved until its good lines
        go, and a single line it refuses is skipped, counted in `rejected` and named in the log: one odd
        line must not stop a box for good."""
        c = self.cursor
        size = self.settings.batch_lines
        table = f"{self.settings.database}.{LINES}"
        while (batch := self.lines.lines_after(c.line_id, size, self._maybe_sent)) is not None:
            if batch.last_id > c.sent_hi:                    # the bound goes to disk before the lines go out
                c.sent_hi = batch.last_id + self.settings.batch_lines
                c.save()
            self._maybe_sent = max(self._maybe_sent, batch.last_id)
            try:
                self.client.insert_json(table, batch.body, self._insert_settings, insert_lines_sql(table), once=True)
            except ClickHouseError as exc:
                if exc.code not in DATA_ERRORS:
                    raise
                if batch.n > 1:
                    size = batch.n // 2
                    continue
                log.error("fleet: line %d refused by ClickHouse, skipped: %s", batch.last_id, exc)
                c.rejected += 1
                c.line_id = batch.last_id
                c.save()
                with self._lock:
                    self.last_error, self.last_error_at = f"line {batch.last_id} refused: {exc}"[:500], time.time()
                return 0
            c.line_id = batch.last_id                        # acknowledged: now the cursor may move
            c.shipped += batch.n
            c.sent_hi = max(c.sent_hi, c.line_id + self.settings.batch_lines)   # the next batch saves nothing more
            c.save()
            with self._lock:
                self.batches += 1
                self.last_ship_at = time.time()
            return batch.n
        return 0

    def _ship_alerts(self) -> None:
        if self.alerts is None:
            return
        c = self.cursor
        version = int(time.time() * 1000)
        alerts, body = self.alerts.alerts(c.alert_id, c.open_alerts, ALERTS_PER_PASS, version)
        if not alerts:
            return
        self.client.insert_json(f"{self.settings.database}.{ALERTS}", body, self._insert_settings)
        c.alert_id = max([c.alert_id, *(int(a["id"]) for a in alerts)])
        c.open_alerts = sorted({int(a["id"]) for a in alerts if a.get("explanation_status") == PENDING})[-MAX_OPEN_ALERTS:]
        c.save()
        with self._lock:
            self.alerts_shipped += len(alerts)

    # --- what the store and the figures ask --------------------------------------------------
    def keep_from(self, last_id: int) -> int:
        """The lowest line id the store's retention must keep, its newest being `last_id`: the first unshipped
        one, or, when more than max_unshipped_lines wait, the first of the newest max_unshipped_lines (those
        before it are lost: counted in dropped_unshipped at the next pass). Cheap: the store's writer calls it."""
        return max(self.cursor.line_id + 1, last_id - self.settings.max_unshipped_lines + 1)

    def figures(self) -> dict[str, Any]:
        """shipped, pending, oldest_unshipped_s, last_error and the rest, for /api/stats and /metrics."""
        c = self.cursor
        pending = max(0, (self._last_id or 0) - c.line_id)
        oldest = max(0.0, time.time() - self._oldest_ts) if pending and self._oldest_ts is not None else None
        with self._lock:
            return {"box_id": self.settings.box_id, "shipped": c.shipped, "pending": pending,
                    "oldest_unshipped_s": oldest, "last_error": self.last_error,
                    "last_error_at": self.last_error_at, "last_ship_at": self.last_ship_at,
                    "dropped_unshipped": c.dropped_unshipped, "rejected": c.rejected,
                    "alerts_shipped": self.alerts_shipped,
                    "batches": self.batches, "failures": self.failures, "backoff_s": self.backoff_s,
                    "cursor": c.line_id}

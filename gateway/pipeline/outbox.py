"""The alert outbox: every alert (and every update of it) is written to SQLite before it is
published, and marked delivered when the broker acknowledges it (PUBACK); the alert history is
read from here, so it survives a restart.

Knows nothing about MQTT or how alerts are raised: alerts.py publishes what is pending here.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

MAX_HISTORY = 10_000        # alerts kept; older ones (and their delivered events) are deleted

_SCHEMA = """
CREATE TABLE IF NOT EXISTS alerts(     -- the alert as last updated (explanation included)
  id INTEGER PRIMARY KEY,
  body TEXT NOT NULL                   -- Alert.to_dict() as JSON
);
CREATE TABLE IF NOT EXISTS outbox(     -- events to publish, in order
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  alert_id INTEGER NOT NULL,
  event TEXT NOT NULL,                 -- "alert" | "update"
  payload TEXT NOT NULL,               -- the JSON published
  created REAL NOT NULL,
  delivered REAL                       -- Unix time of the PUBACK; NULL while pending
);
CREATE INDEX IF NOT EXISTS outbox_pending ON outbox(delivered) WHERE delivered IS NULL;
"""


class AlertOutbox:
    """save(alert, event, deliver) -> seq | None; pending() -> [(seq, alert, payload)];
    delivered(seq); recent(limit); get(id); last_id(). Thread-safe (one connection, one lock);
    every write is committed with synchronous=FULL before it returns."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)

    def last_id(self) -> int:
        with self._lock:
            return self._db.execute("SELECT coalesce(max(id), 0) FROM alerts").fetchone()[0]

    def save(self, alert: dict, event: str, deliver: bool) -> int | None:
        """Write the alert's current state and, when `deliver`, its event to publish; returns the
        event's seq (None without one)."""
        body = json.dumps(alert, ensure_ascii=False)
        payload = json.dumps({"event": event, **alert}, ensure_ascii=False)
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("INSERT OR REPLACE INTO alerts(id, body) VALUES (?, ?)", (alert["id"], body))
                seq = None
                if deliver:
                    seq = db.execute("INSERT INTO outbox(alert_id, event, payload, created) VALUES (?,?,?,?)",
                                     (alert["id"], event, payload, time.time())).lastrowid
                if event == "alert" and alert["id"] % 100 == 0:
                    cut = alert["id"] - MAX_HISTORY
                    db.execute("DELETE FROM alerts WHERE id <= ?", (cut,))
                    db.execute("DELETE FROM outbox WHERE alert_id <= ? AND delivered IS NOT NULL", (cut,))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return seq

    def pending(self) -> list[tuple[int, str, str]]:
        """Undelivered events, oldest first: (seq, host of the alert, payload)."""
        with self._lock:
            rows = self._db.execute("SELECT seq, payload FROM outbox WHERE delivered IS NULL ORDER BY seq").fetchall()
        return [(seq, json.loads(p).get("host", ""), p) for seq, p in rows]

    def delivered(self, seq: int) -> None:
        with self._lock:
            self._db.execute("UPDATE outbox SET delivered=? WHERE seq=?", (time.time(), seq))

    def counts(self) -> dict:
        with self._lock:
            pend, done = self._db.execute(
                "SELECT sum(delivered IS NULL), sum(delivered IS NOT NULL) FROM outbox").fetchone()
        return {"outbox_pending": pend or 0, "outbox_delivered": done or 0}

    def get(self, alert_id: int) -> dict | None:
        with self._lock:
            r = self._db.execute("SELECT body FROM alerts WHERE id=?", (int(alert_id),)).fetchone()
        return json.loads(r[0]) if r else None

    def recent(self, limit: int) -> list[dict]:
        """Newest first."""
        if limit <= 0:
            return []
        with self._lock:
            rows = self._db.execute("SELECT body FROM alerts ORDER BY id DESC LIMIT ?", (int(limit),)).fetchall()
        return [json.loads(b) for (b,) in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()

"""What a box ships, read from its own SQLite files: the store's lines after a cursor (with their fields,
template text and named parameters, gateway/pipeline/store_schema.py) and the alert outbox's alerts
(gateway/pipeline/outbox.py), as rows of the fleet's tables (gateway/fleet/schema.py). Read-only
connections; knows nothing about ClickHouse or the cursor's keeping.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

_NAME = "coalesce(name, '')"
_NUM = "CASE WHEN abs(num) <= 1.7976931348623157e308 THEN num END"    # SQLite writes an infinity as Inf: not JSON


def _params(col: str) -> str:
    return f"(SELECT json_group_array({col}) FROM (SELECT * FROM params p WHERE p.line_id = l.id ORDER BY p.pos))"


# A line as its JSONEachRow object, made by SQLite (3x the rate of json.dumps per row). SQLite writes a REAL
# with 15 significant digits: a Unix time keeps 10 microseconds. pid is stored only when it is an integer.
_LINES = ("SELECT l.id, l.ts, json_object('box', ?1, 'id', l.id, 'ts', l.ts, 'time', coalesce(l.time, l.ts),"
          " 'time_text', l.time_text, 'source', l.source, 'host', l.host, 'line_host', l.line_host,"
          " 'component', l.component, 'pid', CASE WHEN typeof(l.pid) = 'integer' THEN l.pid END,"
          " 'severity', l.severity, 'level', l.level, 'text', l.text, 'template_id', l.template_id,"
          " 'template', coalesce(t.template, ''),"
          f" 'param_text', {_params('text')}, 'param_num', {_params(_NUM)},"
          f" 'param_name', {_params(_NAME)}, 'resent', l.id <= ?4)"
          " FROM logs l LEFT JOIN templates t ON t.id = l.template_id WHERE l.id > ?2 ORDER BY l.id LIMIT ?3")


@dataclass
class Batch:
    """Lines after a cursor: `body` is their JSONEachRow (one object per line, UTF-8), `last_id` the id of
    the last one (the cursor once they are acknowledged), `n` how many, `first_ts` the first one's arrival."""

    body: bytes
    n: int
    last_id: int
    first_ts: float


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30,
                         check_same_thread=False, isolation_level=None)
    db.execute("PRAGMA query_only=ON")
    db.execute("PRAGMA busy_timeout=30000")
    return db


class StoreSource:
    """lines_after(cursor, limit) -> Batch | None; id_range(); first_ts_after(cursor). One connection:
    one thread (the shipper's) uses it."""

    def __init__(self, store_path: str | Path, box_id: str) -> None:
        self.path = Path(store_path)
        self.box_id = box_id
        self._db: sqlite3.Connection | None = None

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = _connect(self.path)
        return self._db

    def id_range(self) -> tuple[int | None, int | None]:
        """(first, last) id in the store; (None, None) when empty. Ids are contiguous: retention deletes
        from the oldest, and a rolled-back commit uses none."""
        return tuple(self._conn().execute("SELECT min(id), max(id) FROM logs").fetchone())  # type: ignore[return-value]

    def first_ts_after(self, cursor: int) -> float | None:
        r = self._conn().execute("SELECT ts FROM logs WHERE id > ? ORDER BY id LIMIT 1", (cursor,)).fetchone()
        return r[0] if r else None

    def lines_after(self, cursor: int, limit: int, resent_upto: int = 0) -> Batch | None:
        """The first `limit` lines after id `cursor`, with their parameters (one statement: one snapshot); those
        with id <= `resent_upto` (sent before, maybe) with `resent` 1."""
        rows = self._conn().execute(_LINES, (self.box_id, cursor, limit, resent_upto)).fetchall()
        if not rows:
            return None
        body = "\n".join(r[2] for r in rows) + "\n"
        return Batch(body.encode("utf-8"), len(rows), rows[-1][0], rows[0][1])

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


class AlertSource:
    """alerts(after_id, also_ids, limit) -> (rows, JSONEachRow body) from the alert outbox's history."""

    def __init__(self, alerts_path: str | Path, box_id: str) -> None:
        self.path = Path(alerts_path)
        self.box_id = box_id
        self._db: sqlite3.Connection | None = None

    def alerts(self, after_id: int, also_ids: list[int], limit: int, version: int) -> tuple[list[dict], bytes]:
        """Alerts with id > after_id (at most `limit`, oldest first) and those of `also_ids` (still open when
        last shipped: their explanation may have come since), each with `version`."""
        if not self.path.exists():
            return [], b""
        if self._db is None:
            self._db = _connect(self.path)
        rows = self._db.execute("SELECT id, body FROM alerts WHERE id > ? ORDER BY id LIMIT ?",
                                (after_id, limit)).fetchall()
        if also_ids:
            marks = ",".join("?" * len(also_ids))
            rows += self._db.execute(f"SELECT id, body FROM alerts WHERE id IN ({marks}) AND id <= ?",
                                     (*also_ids, after_id)).fetchall()
        alerts = [json.loads(body) for _, body in rows]
        lines = [json.dumps(_alert_row(a, self.box_id, version), ensure_ascii=False) for a in alerts]
        return alerts, ("\n".join(lines) + "\n").encode("utf-8") if lines else b""

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def _alert_row(a: dict, box: str, version: int) -> dict:
    return {"box": box, "id": int(a["id"]), "version": version, "ts": float(a.get("ts") or 0.0),
            "kind": str(a.get("kind") or ""), "severity": str(a.get("severity") or ""),
            "host": str(a.get("host") or ""), "source": str(a.get("source") or ""),
            "template_id": a.get("template_id"), "template": str(a.get("template") or ""),
            "lines": [str(x) for x in a.get("lines") or []],
            "line_ids": [int(x) for x in a.get("line_ids") or [] if isinstance(x, int) and x >= 0],
            "count": int(a.get("count") or 0), "rule": a.get("rule"), "explanation": a.get("explanation"),
            "explanation_status": str(a.get("explanation_status") or "")}

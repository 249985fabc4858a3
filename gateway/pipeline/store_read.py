"""Reading the log store: a pool of read-only SQLite connections and the searches over it (lines by
words, time, host, severity, template; one line; a line's structured fields).

One meaning of "host" for every reader: the host the line names in its header, else the transport's
(LINE_HOST); the transport's own sender is kept beside it as `peer`. The query surface
(gateway/pipeline/query.py) filters with the same expressions. Knows nothing about writing.
"""

from __future__ import annotations

import math
import re
import sqlite3
import threading
import time
from collections import deque
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

from gateway.ingest.record import parse_severity_strict, severity_name

MAX_SEARCH_LIMIT = 1_000         # rows one search may return
MAX_QUERY_CHARS = 512            # longer search text is refused (cheap FTS queries only)
MAX_READERS = 4                  # pooled read connections; a reader beyond them waits for one
READER_WAIT_S = 30.0
READER_IDLE_S = 10.0             # pooled connections idle this long drop their page cache

# A line's host and time as every reader sees them (SQL over `logs l`): its own, else the transport's.
LINE_HOST = "coalesce(l.line_host, l.host)"
LINE_TIME = "coalesce(l.time, l.ts)"
_COLUMNS = f"l.id, l.ts, l.source, {LINE_HOST}, l.host, l.severity, l.text, l.template_id"


class StoreClosed(RuntimeError):
    pass


def fts_query(text: str) -> str | None:
    """User text -> a safe FTS5 query: every whitespace-separated word becomes a quoted phrase
    (quotes doubled), all ANDed; a trailing * keeps prefix search. FTS operators in user text
    (AND, NEAR, column:, ^, parentheses) are thus literal. None when no word is left."""
    parts = []
    for chunk in text.split():
        prefix = chunk.endswith("*")
        chunk = chunk.rstrip("*")
        if not re.search(r"\w", chunk):
            continue
        parts.append('"' + chunk.replace('"', '""') + '"' + ("*" if prefix else ""))
    return " ".join(parts) if parts else None


def _row(r: tuple) -> dict:
    return {"id": r[0], "ts": r[1], "source": r[2], "host": r[3], "peer": r[4],
            "severity": severity_name(r[5]), "text": r[6], "template_id": r[7]}


class StoreReader:
    """search(...) -> [dict]   dicts: id, ts, source, host (the line's), peer (the transport's), severity
                               (name), text, template_id
    get(id) -> dict | None; fields(id) -> dict | None; count(); id_range(); close()

    Readers borrow one of at most MAX_READERS pooled connections (WAL lets them read while the writer
    writes), so server threads that come and go never leave connections behind (issue 30). Any
    thread may call any method."""

    def __init__(self, path: Path, connect: Callable[[], sqlite3.Connection]) -> None:
        self.path = path
        self._closed = False
        self._cv = threading.Condition()
        # The pool, whole: in WAL mode SQLite keeps a closed connection's fd while the writer holds its
        # lock, so a pool that grew and shrank would keep its peak in fds anyway (issue 30).
        self._idle: deque[tuple[sqlite3.Connection, float]] = deque(   # (connection, idle since), newest last
            (connect(), time.monotonic()) for _ in range(MAX_READERS))
        self.n_open = MAX_READERS                                       # idle + in use

    @contextmanager
    def connection(self):
        """A pooled read-only connection for the duration of a `with` block."""
        if self._closed:
            raise StoreClosed(f"store {self.path} is closed")
        db = None
        with self._cv:
            now = time.monotonic()
            for i, (idle, since) in enumerate(self._idle):   # a burst is over: its caches go, not the fds
                if now - since > READER_IDLE_S:
                    idle.execute("PRAGMA shrink_memory")
                    self._idle[i] = (idle, math.inf)          # shrunk; idle until used again
            while db is None:
                if self._idle:
                    db = self._idle.pop()[0]
                elif not self._cv.wait(READER_WAIT_S):
                    raise StoreClosed(f"store {self.path}: no read connection free in {READER_WAIT_S:g} s")
        try:
            yield db
        finally:
            with self._cv:
                if self._closed:
                    db.close()
                    self.n_open -= 1
                else:
                    self._idle.append((db, time.monotonic()))
                    self._cv.notify()

    def close(self) -> None:
        self._closed = True
        with self._cv:     # connections in use are closed as they come back
            while self._idle:
                self._idle.pop()[0].close()
                self.n_open -= 1

    # --- lines ---------------------------------------------------------------------------
    def get(self, line_id: int) -> dict | None:
        with self.connection() as db:
            r = db.execute(f"SELECT {_COLUMNS} FROM logs l WHERE l.id=?", (int(line_id),)).fetchone()
        return _row(r) if r else None

    def search(self, text: str | None = None, *, since: float | None = None, until: float | None = None,
               host: str | None = None, peer: str | None = None, severity: int | str | None = None,
               template_id: int | None = None, source: str | None = None, before_id: int | None = None, after_id: int | None = None,
               limit: int = 100) -> list[dict]:
        """Lines matching every given filter, newest first (oldest first when `after_id` is given).

        text: words (all must occur; `word*` is a prefix; FTS syntax is taken literally);
        since/until: Unix seconds of arrival, inclusive; host: the line's (LINE_HOST); peer: the
        transport's sender; severity: at
        least this severe (name or 0..7); before_id/after_id: paging cursors. Raises ValueError
        (naming the parameter) on bad input.
        """
        if not 1 <= int(limit) <= MAX_SEARCH_LIMIT:
            raise ValueError(f"limit={limit} must be within 1..{MAX_SEARCH_LIMIT}")
        where, args = [], []
        join = ""
        if text is not None and text.strip():
            if len(text) > MAX_QUERY_CHARS:
                raise ValueError(f"search text is {len(text)} characters; the limit is {MAX_QUERY_CHARS}")
            q = fts_query(text)
            if q is None:
                return []
            join = "JOIN logs_fts f ON f.rowid = l.id"
            where.append("logs_fts MATCH ?")
            args.append(q)
        for cond, value in (("l.ts >= ?", None if since is None else float(since)),
                            ("l.ts <= ?", None if until is None else float(until)),
                            (f"{LINE_HOST} = ?", host or None), ("l.host = ?", peer or None),
                            ("l.source = ?", source or None),
                            ("l.severity <= ?", None if severity is None else int(parse_severity_strict(severity))),
                            ("l.template_id = ?", None if template_id is None else int(template_id)),
                            ("l.id < ?", None if before_id is None else int(before_id)),
                            ("l.id > ?", None if after_id is None else int(after_id))):
            if value is not None:
                where.append(cond)
                args.append(value)
        order = "ASC" if after_id is not None else "DESC"
        sql = (f"SELECT {_COLUMNS} FROM logs l {join}" + (" WHERE " + " AND ".join(where) if where else "")
               + f" ORDER BY l.id {order} LIMIT ?")
        args.append(int(limit))
        try:
            with self.connection() as db:
                rows = db.execute(sql, args).fetchall()
        except sqlite3.OperationalError as exc:   # should not happen with fts_query; never a 5xx
            raise ValueError(f"search text {text!r} could not be searched: {exc}") from exc
        return [_row(r) for r in rows]

    def fields(self, line_id: int) -> dict | None:
        """A line's structured fields: time (its own, else ts), time_text, line_host, component,
        pid, level, template_id, template, params [{pos, text, num, name}]; None if no such line."""
        with self.connection() as db:
            r = db.execute("SELECT l.ts, l.time, l.time_text, l.line_host, l.component, l.pid, l.level, l.template_id,"
                           " t.template FROM logs l LEFT JOIN templates t ON t.id = l.template_id WHERE l.id=?",
                           (int(line_id),)).fetchone()
            if r is None:
                return None
            ps = db.execute("SELECT pos, text, num, name FROM params WHERE line_id=? ORDER BY pos",
                            (int(line_id),)).fetchall()
        return {"time": r[1] if r[1] is not None else r[0], "time_text": r[2], "line_host": r[3], "component": r[4],
                "pid": r[5], "level": r[6], "template_id": r[7], "template": r[8],
                "params": [{"pos": p, "text": t, "num": n, "name": nm} for p, t, n, nm in ps]}

    def count(self) -> int:
        with self.connection() as db:
            return db.execute("SELECT count(*) FROM logs").fetchone()[0]

    def id_range(self) -> tuple[int | None, int | None]:
        with self.connection() as db:
            return tuple(db.execute("SELECT min(id), max(id) FROM logs").fetchone())  # type: ignore[return-value]

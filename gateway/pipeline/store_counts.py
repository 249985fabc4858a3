"""Counts of the stored lines by host, component, level and template, kept up to date by reading only
the lines stored since the last read (ids only grow), at most `budget` lines a read.

What the call grammar and the grounding rank values by (query.known_values, query.known_words,
answer.grounding.Kinds). A GROUP BY over the whole store took seconds on each question's grounding
once the store held millions of lines, on the engine thread, and past the surface's time cap it gave
nothing. Here a read counts what arrived since the one before (a line rate's worth of a refresh
interval), then older lines not yet counted, newest first: a large store is counted over a few reads,
its newest lines first. Lines that retention deleted stay counted: the counts rank values, a
query over the store says what is there.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from typing import Any

READ_LINES = 250_000        # lines counted per read (the newest first, then older ones)
FIELDS = ("host", "component", "level")
MAX_ZONES = 256             # id ranges whose newest line time is kept (the oldest merge first)
TIME = "coalesce(l.time, l.ts)"     # a line's own time, else its arrival: every reader's (query.py)


class StoreCounts:
    """refresh(); top(field, limit) -> [value]; templates(limit) -> [(template_id, lines)]. Thread-safe.
    `exprs`: the SQL expression of each field over `logs l` (query.py's, one meaning with its filters)."""

    def __init__(self, surface: Any, exprs: dict[str, str], budget: int = READ_LINES) -> None:
        self.surface = surface
        self.exprs = exprs
        self.budget = int(budget)
        self._lock = threading.Lock()
        self._values: dict[str, Counter] = {f: Counter() for f in FIELDS}
        self._templates: Counter = Counter()
        self._span: tuple[int, int] | None = None     # ids counted: (lo, hi], lo shrinking to the first line
        self._zones: list[tuple[int, int, float]] = []  # (lo, hi, newest line time) over the counted ids
        self._whole = False                           # the counted ids reach the store's first line

    def refresh(self) -> None:
        """Counts the lines stored since the last read, then older uncounted ones, `budget` lines in all
        (the first read: the newest lines)."""
        with self._lock:
            try:
                # one min() or max() a statement: SQLite reads the rowid b-tree's end for each, not every row
                rows, _ = self.surface.execute("SELECT (SELECT min(id) FROM logs), (SELECT max(id) FROM logs)")
                first, top = (rows[0][0] or 0, rows[0][1] or 0) if rows else (0, 0)
                lo, hi = self._span if self._span is not None else (top, top)
                left = self.budget
                if top > hi:                                  # the lines stored since, in id order
                    end = min(top, hi + left)
                    self._count(hi, end)
                    left -= end - hi
                    hi = end
                if left > 0 and lo >= first:                  # older lines not yet counted, newest first
                    start = max(first - 1, lo - left)
                    self._count(start, lo)
                    lo = start
                self._span = (lo, hi)
                self._whole = lo < first
            except (ValueError, RuntimeError, sqlite3.DatabaseError):   # query.QueryError, QueryInterrupted
                return                                        # counted next time; what is known stays

    def _count(self, lo: int, hi: int) -> None:
        """Adds the lines with ids in (lo, hi]: all of their counts or none (a read cut by the time cap)."""
        values: dict[str, list] = {}
        for field in FIELDS:
            values[field], _ = self.surface.execute(
                f"SELECT {self.exprs[field]} AS v, count(*) FROM logs l WHERE l.id > ? AND l.id <= ? "
                "AND v IS NOT NULL AND v != '' GROUP BY v", [lo, hi])
        templates, _ = self.surface.execute("SELECT l.template_id, count(*) FROM logs l WHERE l.id > ? AND "
                                            "l.id <= ? AND l.template_id IS NOT NULL GROUP BY l.template_id", [lo, hi])
        newest, _ = self.surface.execute(f"SELECT max({TIME}) FROM logs l WHERE l.id > ? AND l.id <= ?", [lo, hi])
        if newest and newest[0][0] is not None:
            self._zones = sorted([*self._zones, (lo, hi, float(newest[0][0]))])
            while len(self._zones) > MAX_ZONES:               # the two oldest become one
                (a, _, t1), (_, b, t2) = self._zones[:2]
                self._zones[:2] = [(a, b, max(t1, t2))]
        for field, rows in values.items():
            self._values[field].update({str(v): int(n) for v, n in rows})
        self._templates.update({int(t): int(n) for t, n in templates})

    def since_floor(self, since: float) -> int:
        """An id no line at or below has a time at or after `since` (0: none known): the counted ranges
        from the first line on whose newest time is older. A time window's lines are all above it."""
        with self._lock:
            if not self._whole:
                return 0
            floor = 0
            for lo, hi, newest in self._zones:
                if newest >= since or (floor and lo != floor):     # a line of the window, or a gap
                    break
                floor = hi
            return floor

    def newest(self) -> tuple[float, int] | None:
        """(the newest line time of the counted lines, the last id counted) once they reach the first line."""
        with self._lock:
            if not self._whole or not self._zones or self._span is None:
                return None
            return max(t for _, _, t in self._zones), self._span[1]

    def top(self, field: str, limit: int) -> list[str]:
        """The field's most frequent values (ties by value)."""
        with self._lock:
            return [v for v, _ in sorted(self._values[field].items(), key=lambda x: (-x[1], x[0]))[:limit]]

    def templates(self, limit: int) -> list[tuple[int, int]]:
        """(template id, lines), the most frequent first (ties by id)."""
        with self._lock:
            return sorted(self._templates.items(), key=lambda x: (-x[1], x[0]))[:limit]

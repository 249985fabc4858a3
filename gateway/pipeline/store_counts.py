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

    def refresh(self) -> None:
        """Counts the lines stored since the last read, then older uncounted ones, `budget` lines in all
        (the first read: the newest lines)."""
        from gateway.pipeline.query import QueryError, QueryInterrupted
        with self._lock:
            try:
                rows, _ = self.surface.execute("SELECT min(id), max(id) FROM logs")
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
            except (QueryError, QueryInterrupted, sqlite3.DatabaseError):
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
        for field, rows in values.items():
            self._values[field].update({str(v): int(n) for v, n in rows})
        self._templates.update({int(t): int(n) for t, n in templates})

    def top(self, field: str, limit: int) -> list[str]:
        """The field's most frequent values (ties by value)."""
        with self._lock:
            return [v for v, _ in sorted(self._values[field].items(), key=lambda x: (-x[1], x[0]))[:limit]]

    def templates(self, limit: int) -> list[tuple[int, int]]:
        """(template id, lines), the most frequent first (ties by id)."""
        with self._lock:
            return sorted(self._templates.items(), key=lambda x: (-x[1], x[0]))[:limit]

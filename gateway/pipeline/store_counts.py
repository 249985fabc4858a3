"""Counts of the stored lines by host, component, level and template, kept up to date by reading only
the lines stored since the last read (ids only grow), at most `budget` lines a read.

What the call grammar and the grounding rank values by (query.known_values, query.known_words,
answer.grounding.Kinds). A GROUP BY over the whole store took seconds on each question's grounding
once the store held millions of lines, on the engine thread, and past the surface's time cap it gave
nothing. Here a read counts what arrived since the one before (a line rate's worth of a refresh
interval), then older lines not yet counted, newest first: a large store is counted over a few reads,
its newest lines first. Lines that retention deleted stay in the rankings (top, templates): the counts
rank values, a query over the store says what is there.

Each read's id range is a zone that keeps its lines' counts by (host, component, level) and the span of
their times. A count or a top-k by those fields over a time window (query_counts.py) is then exact
without reading the store: zones wholly in the window and the store are summed, and only the zones
retention cut into, those a window's edge crosses and the lines not counted yet are read.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any

READ_LINES = 250_000        # lines counted per read (the newest first, then older ones)
FIELDS = ("host", "component", "level")
MAX_ZONES = 256             # id ranges whose counts and times are kept (the smallest neighbours merge)
MAX_JOINT = 512             # (host, component, level) values a zone keeps; past it its lines are read
                            # (bounds the zones' memory to tens of MB on a store of many hosts)
TIME = "coalesce(l.time, l.ts)"     # a line's own time, else its arrival: every reader's (query.py)


@dataclass
class Zone:
    """The counted lines with ids in (lo, hi]: how many, their times' span, and their counts by
    (host, component, level) (None: too many distinct values to keep)."""
    lo: int
    hi: int
    oldest: float
    newest: float
    lines: int
    joint: Counter | None

    def merged(self, other: "Zone") -> "Zone":
        joint = None
        if self.joint is not None and other.joint is not None:
            joint = self.joint + other.joint
            joint = joint if len(joint) <= MAX_JOINT else None
        return Zone(self.lo, other.hi, min(self.oldest, other.oldest), max(self.newest, other.newest),
                    self.lines + other.lines, joint)


class StoreCounts:
    """refresh(); top(field, limit) -> [value]; templates(limit) -> [(template_id, lines)]; split(...)
    -> what is known of a window and what must be read. Thread-safe. `exprs`: the SQL expression of each
    field over `logs l` (query.py's, one meaning with its filters)."""

    def __init__(self, surface: Any, exprs: dict[str, str], budget: int = READ_LINES) -> None:
        self.surface = surface
        self.exprs = exprs
        self.budget = int(budget)
        self._lock = threading.Lock()
        self._values: dict[str, Counter] = {f: Counter() for f in FIELDS}
        self._templates: Counter = Counter()
        self._span: tuple[int, int] | None = None     # ids counted: (lo, hi], lo shrinking to the first line
        self._zones: list[Zone] = []                  # over the counted ids that held lines, in id order
        self._whole = False                           # the counted ids reach the store's first line

    def refresh(self) -> None:
        """Counts the lines stored since the last read, then older uncounted ones, `budget` lines in all
        (the first read: the newest lines)."""
        with self._lock:
            try:
                first, top = self._id_range()
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

    def _id_range(self) -> tuple[int, int]:
        """(the store's first line id, its last); (0, 0) when empty."""
        # one min() or max() a statement: SQLite reads the rowid b-tree's end for each, not every row
        rows, _ = self.surface.execute("SELECT (SELECT min(id) FROM logs), (SELECT max(id) FROM logs)")
        return (rows[0][0] or 0, rows[0][1] or 0) if rows else (0, 0)

    def _count(self, lo: int, hi: int) -> None:
        """Adds the lines with ids in (lo, hi]: all of their counts or none (a read cut by the time cap)."""
        joint, whole = read_joint(self.surface, self.exprs, " WHERE l.id > ? AND l.id <= ?", [lo, hi])
        templates, _ = self.surface.execute("SELECT l.template_id, count(*) FROM logs l WHERE l.id > ? AND "
                                            "l.id <= ? AND l.template_id IS NOT NULL GROUP BY l.template_id", [lo, hi])
        lines = 0
        if not whole:                   # more groups than a statement reads back: the zone keeps no counts
            rows, _ = self.surface.execute(f"SELECT count(*), min({TIME}), max({TIME}) FROM logs l "
                                           "WHERE l.id > ? AND l.id <= ?", [lo, hi])
            lines, oldest, newest = rows[0]
        elif joint:
            lines, oldest, newest = (sum(n for n, _, _ in joint.values()), min(t for _, t, _ in joint.values()),
                                     max(t for _, _, t in joint.values()))
        if lines:
            counts = Counter({k: n for k, (n, _, _) in joint.items()})
            self._add_zone(Zone(lo, hi, float(oldest), float(newest), int(lines),
                                counts if whole and len(counts) <= MAX_JOINT else None))
        for key, (n, _, _) in joint.items():
            for field, v in zip(FIELDS, key):
                if v is not None and v != "":
                    self._values[field][str(v)] += n
        self._templates.update({int(t): int(n) for t, n in templates})

    def _add_zone(self, zone: Zone) -> None:
        self._zones = sorted([*self._zones, zone], key=lambda z: z.lo)
        while len(self._zones) > MAX_ZONES:           # the two smallest neighbours become one: zones stay
            i = min(range(len(self._zones) - 1),      # alike in size, so none read for a window is large
                    key=lambda j: self._zones[j].lines + self._zones[j + 1].lines)
            self._zones[i:i + 2] = [self._zones[i].merged(self._zones[i + 1])]

    def split(self, since: float | None, until: float | None) -> tuple[Counter, list[tuple[int, int | None]]]:
        """What the counts know of the lines in the store whose time is in [since, until] (None: open):
        (their counts by (host, component, level), the id ranges (lo, hi] (hi None: no end) whose lines
        the caller reads itself): the lines not counted yet, the zones retention cut into, those the
        window's edges cross and those keeping no counts. Exact while lines are only added at the top
        and deleted from the bottom (store.py), as of the store's first id read here."""
        with self._lock:
            first, _ = self._id_range()
            if self._span is None:
                return Counter(), [(0, None)]
            lo, hi = self._span
            known: Counter = Counter()
            todo: list[tuple[int, int | None]] = [(first - 1, lo)] if lo >= first else []
            for z in self._zones:
                if z.hi < first or (since is not None and z.newest < since) or (until is not None and z.oldest > until):
                    continue                          # deleted, or wholly outside the window
                inside = (since is None or z.oldest >= since) and (until is None or z.newest <= until)
                if z.joint is None or z.lo < first - 1 or not inside:
                    todo.append((z.lo, z.hi))
                else:
                    known.update(z.joint)
            todo.append((hi, None))
        ranges: list[tuple[int, int | None]] = []
        for a, b in sorted(todo, key=lambda r: r[0]):          # neighbouring ranges read as one
            if ranges and ranges[-1][1] == a:
                ranges[-1] = (ranges[-1][0], b)
            else:
                ranges.append((a, b))
        return known, ranges

    def since_floor(self, since: float) -> int:
        """An id no line at or below has a time at or after `since` (0: none known): the counted ranges
        from the first line on whose newest time is older. A time window's lines are all above it."""
        with self._lock:
            if not self._whole:
                return 0
            floor = 0
            for z in self._zones:
                if z.newest >= since or (floor and z.lo != floor):     # a line of the window, or a gap
                    break
                floor = z.hi
            return floor

    def newest(self) -> tuple[float, int] | None:
        """(the newest line time of the counted lines, the last id counted) once they reach the first line."""
        with self._lock:
            if not self._whole or not self._zones or self._span is None:
                return None
            return max(z.newest for z in self._zones), self._span[1]

    def top(self, field: str, limit: int) -> list[str]:
        """The field's most frequent values (ties by value)."""
        with self._lock:
            return [v for v, _ in sorted(self._values[field].items(), key=lambda x: (-x[1], x[0]))[:limit]]

    def templates(self, limit: int) -> list[tuple[int, int]]:
        """(template id, lines), the most frequent first (ties by id)."""
        with self._lock:
            return sorted(self._templates.items(), key=lambda x: (-x[1], x[0]))[:limit]


def read_joint(surface: Any, exprs: dict[str, str], where: str, args: list) -> tuple[dict[tuple, tuple], bool]:
    """({(host, component, level): (lines, oldest time, newest time)} of the lines `where` selects,
    whether every group was read back (the surface's row cap))."""
    rows, truncated = surface.execute(
        f"SELECT {exprs['host']}, {exprs['component']}, {exprs['level']}, count(*), min({TIME}), max({TIME}) "
        f"FROM logs l{where} GROUP BY 1, 2, 3", args)
    return {(h, c, v): (int(n), float(t0), float(t1)) for h, c, v, n, t0, t1 in rows}, not truncated

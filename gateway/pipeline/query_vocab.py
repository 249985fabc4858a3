"""The store's vocabulary for a call grammar and a question's grounding: the most frequent hosts,
components and levels, templates and log words. From the surface's running counts (store_counts.py)
where it keeps them, else one GROUP BY (a fleet node's surface). Split from query.py.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter

from gateway.pipeline.query import _FIELD_EXPRS, QueryError, QueryInterrupted, QuerySurface


def known_values(surface: QuerySurface, field: str, limit: int = 64) -> list[str]:
    """The most frequent values of host | component | level in the store (for a call grammar): from the
    store's running counts (store_counts.py) where the surface keeps them, else one GROUP BY."""
    if isinstance(surface, QuerySurface):
        return surface.counts().top(field, limit)
    try:
        rows, _ = surface.execute(f"SELECT {_FIELD_EXPRS[field]} AS v FROM logs l WHERE v IS NOT NULL AND v != '' GROUP BY v"
                                  " ORDER BY count(*) DESC LIMIT ?", [int(limit)])
    except (QueryInterrupted, sqlite3.DatabaseError):
        return []
    return [str(r[0]) for r in rows]


def template_lines(surface: QuerySurface, limit: int) -> list[tuple[int, str, int]]:
    """(template id, its text, lines) of the store's most frequent templates: from its running counts
    where the surface keeps them, else one GROUP BY (a fleet node's surface serves it)."""
    if not isinstance(surface, QuerySurface):
        try:
            rows, _ = surface.execute("SELECT l.template_id, t.template, count(*) FROM logs l JOIN templates t ON "
                                      "t.id = l.template_id GROUP BY l.template_id ORDER BY count(*) DESC LIMIT ?",
                                      [int(limit)])
        except (QueryError, QueryInterrupted, sqlite3.DatabaseError):
            return []
        return [(int(i), str(t), int(n)) for i, t, n in rows]
    top = surface.counts().templates(limit)
    text: dict[int, str] = {}
    for i in range(0, len(top), 500):
        ids = [t for t, _ in top[i:i + 500]]
        try:
            rows, _ = surface.execute(f"SELECT id, template FROM templates WHERE id IN ({','.join('?' * len(ids))})", ids)
        except (QueryInterrupted, sqlite3.DatabaseError):
            rows = []
        text.update({int(t): str(x) for t, x in rows})
    return [(t, text[t], n) for t, n in top if t in text]


_WORD = re.compile(r"[A-Za-z][\w.'/-]*[A-Za-z0-9]|[A-Za-z]{2,}")
PARAM_WORD_LINES = 20_000     # known_words reads the parameters of this many newest lines


def known_words(surface: QuerySurface, limit: int = 2000) -> list[str]:
    """The log words of the store's templates, most frequent first (by lines), in their most frequent
    spelling: what a text filter is made of (for a call grammar). Placeholders and numbers excluded."""
    rows = [(t, n) for _, t, n in template_lines(surface, 5000)]
    try:    # words inside the recent lines' template parameters: Drain merges lines that differ in a word
        # ("heater zone 2 temperature 78.2 C" with "... over-temperature: 93.9 C": "temperature" is a <*>)
        params, _ = surface.execute("SELECT p.text, count(*) FROM params p WHERE p.num IS NULL AND p.line_id > "
                                    "(SELECT max(id) FROM logs) - ? GROUP BY p.text ORDER BY 2 DESC LIMIT 5000",
                                    [PARAM_WORD_LINES])
    except (QueryInterrupted, sqlite3.DatabaseError):
        params = []
    by_lower: dict[str, Counter] = {}
    for template, n in [*rows, *params]:
        for tok in str(template).split():
            if "<" in tok:
                continue
            for w in _WORD.findall(tok):
                by_lower.setdefault(w.lower(), Counter())[w] += n
    ranked = sorted(by_lower.values(), key=lambda c: -sum(c.values()))
    return [c.most_common(1)[0][0] for c in ranked[:limit]]

"""What the chat reads of a store besides its calls, on the fleet node: the answer layer (gateway/serve/answer/)
grounds a question with a few SQLite statements of its own (known hosts, components, levels and log words; the
kinds of line and their parameters; the lines holding a rare token), sent through the surface's
execute(sql, args). Here each of those statements, recognised by its shape, is answered from ClickHouse with
the rows SQLite would give. A kind of line is the template's text across boxes (a box's template id is its
own), numbered here once for the node's life (`Numbers`), so the call's `template` names the same kind on
every box. A statement not recognised raises UnknownStatement, which the answer layer's reads take as
"nothing known" (as a refused statement on the box). Knows nothing about the model.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from typing import Callable, Protocol

from gateway.fleet.node import sql
from gateway.pipeline.query import QueryError

Rows = list[tuple]


class UnknownStatement(QueryError, sqlite3.DatabaseError):
    """A box's SQL statement the fleet node does not read (a QueryError and a DatabaseError: the answer
    layer's reads catch one or the other)."""


class Numbers:
    """Fleet-wide numbers of template texts: 1, 2, ... in the order first seen, never reused. Thread-safe."""

    def __init__(self) -> None:
        self._by_text: dict[str, int] = {}
        self._texts: list[str] = []
        self._lock = threading.Lock()

    def number(self, text: str) -> int:
        with self._lock:
            n = self._by_text.get(text)
            if n is None:
                self._texts.append(text)
                n = self._by_text[text] = len(self._texts)
            return n

    def text(self, number: int) -> str | None:
        with self._lock:
            return self._texts[number - 1] if 1 <= number <= len(self._texts) else None


class FleetSurface(Protocol):
    """What these reads use of surface.FleetSurface (named here: surface.py imports this module)."""
    table: str
    row_cap: int
    numbers: Numbers

    def q(self, statement: str) -> list[dict]: ...


def _fts_words(q: str) -> str:
    """The words of a store.fts_query string (`"a" "b"*`) as a text filter (`a b*`)."""
    return " ".join(m.group(1).replace('""', '"') + m.group(2) for m in re.finditer(r'"((?:[^"]|"")*)"(\*?)', q))


def _field(expr: str) -> str:
    return "host" if "line_host" in expr else "level" if "severity" in expr else "component"


# --- the statements, each: (surface, match, args) -> rows as SQLite gives them ----------------------------
def _known_values(s: FleetSurface, m: re.Match, args) -> Rows:
    """query.known_values: the most frequent host | component | level."""
    field = _field(m.group(1))
    w = sql.Where()
    rows = s.counted(lambda rg: sql.top_group(s.table, w, field, int(args[0]) + 1, rg))   # + 1: '' is not a value
    return [(r["value"],) for r in rows if r["value"] != ""][: int(args[0])]


def _template_counts(s: FleetSurface, m: re.Match, args) -> Rows:
    """query.known_words and grounding.Kinds: the templates by lines (Kinds: with their fleet numbers)."""
    limit = int(args[0]) if args else 5000
    w = sql.Where()
    w.conds.append("template != ''")
    rows = s.counted(lambda rg: sql.top_group(s.table, w, "template", limit, rg))
    if m.group(1):
        return [(s.numbers.number(r["value"]), r["value"], int(r["n"])) for r in rows]
    return [(r["value"], int(r["n"])) for r in rows]


def _recent_param_words(s: FleetSurface, m: re.Match, args) -> Rows:
    """query.known_words: the non-numeric parameters of the newest lines (by the line's time, all boxes)."""
    newest = sql.deduped_lines("box, id, time, param_text, param_num", s.table, sql.Where().sql(),
                               "time DESC, box DESC, id DESC", int(args[0]))
    rows = s.q(sql.PerShard(f"SELECT pt, count() AS n FROM ({newest}) ARRAY JOIN param_text AS pt, param_num AS pv"
                            f" WHERE isNull(pv) GROUP BY pt ORDER BY n DESC, pt LIMIT 5000"))
    return [(r["pt"], int(r["n"])) for r in rows]


def _token_where(q: str) -> sql.Where:
    w = sql.Where()
    w.conds += sql.text_conditions(_fts_words(str(q)))
    return w


def _templates_holding(s: FleetSurface, m: re.Match, args) -> Rows:
    """grounding.Kinds._holding: the kinds of the (first 400) lines holding a token."""
    w = _token_where(args[0]).sql("template != ''")
    rows = s.q(f"SELECT DISTINCT template FROM (SELECT template FROM {s.table}{w} LIMIT 400)")
    return [(s.numbers.number(r["template"]),) for r in rows]


def _kind_params(s: FleetSurface, m: re.Match, args) -> Rows:
    """grounding.Kinds._kind: (line, pos, name, text) of the newest lines of a kind, newest line first."""
    text = s.numbers.text(int(args[0]))
    if text is None:
        return []
    w = sql.Where()
    w.conds.append(f"template = {sql.lit(text)}")
    rows = s.q(sql.deduped_lines("box, id, time, param_name, param_text", s.table, w.sql(),
                                 "time DESC, box DESC, id DESC", int(args[1])))
    n = len(rows)
    return [(n - i, pos, name or None, t) for i, r in enumerate(rows)
            for pos, (name, t) in enumerate(zip(r["param_name"], r["param_text"]))]


def _kind_holder_params(s: FleetSurface, m: re.Match, args) -> Rows:
    """grounding.Kinds._holder: (line, pos, name, text) of the newest line of a kind (of the first 400 holding
    a token) with a parameter whose value is the token."""
    text = s.numbers.text(int(args[0]))
    if text is None:
        return []
    w = _token_where(args[1])
    w.conds.append(f"template = {sql.lit(text)}")
    rows = s.q(sql.deduped_lines("box, id, time, param_name, param_text", s.table, w.sql(), "time, box, id", 400))
    held = [r for r in rows if str(args[2]) in r["param_text"]]
    if not held:
        return []
    r = max(held, key=lambda r: (r["time"], r["box"], r["id"]))
    return [(1, pos, name or None, t) for pos, (name, t) in enumerate(zip(r["param_name"], r["param_text"]))]


def _lines_holding(s: FleetSurface, m: re.Match, args) -> Rows:
    """evidence.find: (id, time, host, component, level, time_text, text) of lines holding a token. The id is
    the line's own (its box's): the answer layer only tells the lines apart by it."""
    rows = s.q(sql.deduped_lines(sql.LINE_COLUMNS, s.table, _token_where(args[0]).sql(), "time, box, id", int(args[1])))
    return [(r["id"], r["time"], r["host_"], r["component"], r["level_"], r["time_text"], r["text"]) for r in rows]


STATEMENTS: list[tuple[re.Pattern, Callable[[FleetSurface, re.Match, tuple], Rows]]] = [
    (re.compile(r"SELECT (.+) AS v FROM logs l WHERE v IS NOT NULL AND v != '' GROUP BY v", re.S), _known_values),
    (re.compile(r"SELECT (l\.template_id, )?t\.template, count\(\*\) FROM logs l JOIN templates t"), _template_counts),
    (re.compile(r"SELECT p\.text, count\(\*\) FROM params p WHERE p\.num IS NULL AND p\.line_id >"), _recent_param_words),
    (re.compile(r"SELECT DISTINCT l\.template_id FROM logs l .*logs_fts MATCH \?", re.S), _templates_holding),
    (re.compile(r"SELECT p\.line_id, p\.pos, p\.name, p\.text FROM params p WHERE p\.line_id = \(SELECT max", re.S),
     _kind_holder_params),
    (re.compile(r"SELECT p\.line_id, p\.pos, p\.name, p\.text FROM params p .*l\.template_id = \?", re.S), _kind_params),
    (re.compile(r"SELECT l\.id, .* FROM logs l WHERE l\.id IN \(SELECT rowid FROM logs_fts WHERE logs_fts MATCH \? "
                r"LIMIT \?\)", re.S), _lines_holding),
]


def execute(surface: FleetSurface, statement: str, args: tuple | list = ()) -> tuple[Rows, bool]:
    """(rows, truncated) of one of the answer layer's statements (module doc), at most the surface's row_cap."""
    for pattern, read in STATEMENTS:
        m = pattern.search(statement)
        if m:
            try:
                rows = read(surface, m, tuple(args))
            except (RuntimeError, ConnectionError) as exc:      # ClickHouse refused or is away: nothing known
                raise UnknownStatement(f"the fleet node could not read it: {exc}") from None
            return rows[: surface.row_cap], len(rows) > surface.row_cap
    raise UnknownStatement(f"the fleet node does not read this statement: {statement[:80]!r}")

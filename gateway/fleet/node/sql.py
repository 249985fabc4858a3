"""The query surface's calls (gateway/pipeline/query.py) compiled to ClickHouse SQL over the fleet's lines table
(gateway/fleet/schema.py): each filter a condition, each op's statement. Pure: strings in, SQL out; knows
nothing about HTTP or how results are shaped. SQL that ClickHouse 18.16 and current releases both run: no
query parameters (18.16 has none: every value is a quoted literal), re2 regexes (`match`), and FINAL on
every read, so a line sent twice counts once.

18.16 quirk: a Distributed `... FINAL ORDER BY` without WHERE fails unless the key columns are selected;
every statement here has a WHERE (`box != ''` holds for every line) and line reads select box and id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gateway.pipeline.query import _param_conditions
from gateway.pipeline.query_text import PLACEHOLDER, _line_end_regex

LEVEL = ("ifNull(level, arrayElement(['emergency', 'alert', 'critical', 'error', 'warning', 'notice', 'info',"
         " 'debug'], toUInt64(severity) + 1))")
HOST = "ifNull(line_host, host)"
TEMPLATE = "if(template = '', concat('template ', toString(ifNull(template_id, 0))), template)"
GROUPS = {"box": "box", "host": HOST, "component": "ifNull(component, '')", "level": LEVEL, "template": TEMPLATE}
LINE_COLUMNS = f"box, id, time, {HOST} AS host_, component, {LEVEL} AS level_, time_text, text"
_WORD_CHARS = "A-Za-z0-9_"


def lit(value: str) -> str:
    """A ClickHouse string literal (backslash escapes: ClickHouse reads \\\\, \\' and \\0 in quotes)."""
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'").replace("\0", "\\0") + "'"


def num(value: float) -> str:
    v = float(value)
    return repr(int(v)) if v.is_integer() and abs(v) < 2 ** 53 else repr(v)


def _rx(text: str) -> str:
    """re2-safe escape: every character but letters, digits, _ and non-ASCII is escaped (re2 accepts any
    escaped punctuation)."""
    return "".join(c if c.isalnum() or c == "_" or not c.isascii() else "\\" + c if c.isprintable() and c != " "
                   else f"\\x{ord(c):02x}" for c in text)


def text_conditions(text: str, anchored: bool = False, max_chars: int = 200) -> list[str]:
    """The conditions a text filter puts on `text` (query.py's semantics): ASCII words are whole tokens, any
    case (FTS5's); other words are substrings; a pattern's pieces come in order, and, anchored, end the line."""
    text = str(text)[:max_chars]
    pieces = [p.strip() for p in PLACEHOLDER.split(text)]
    conds: list[str] = []
    if len(pieces) > 1:
        words = [w for p in pieces for w in p.split()]
        if words:
            conds.append(f"match(text, {lit(_any_case('.*'.join(_rx(w) for w in words)))})")
        for w in words:
            if w.isascii() and re.search(r"\w", w):
                conds.append(_token(w))
        if anchored:
            conds.append(f"match(text, {lit(_line_end_regex(text))})")
        return conds
    for word in text.split():
        if word.isascii() and re.search(r"\w", word):
            conds.append(_token(word))
        else:
            conds.append(f"position(text, {lit(word)}) > 0")
    return conds


def _token(word: str) -> str:
    """`word` as whole tokens in the text, any case; a trailing * makes it a prefix (FTS5's `word*`)."""
    prefix = word.endswith("*")
    core = word.rstrip("*")
    core = re.sub(rf"^[^{_WORD_CHARS}]+|[^{_WORD_CHARS}]+$", "", core) or core    # FTS drops edge punctuation
    rx = f"(^|[^{_WORD_CHARS}]){_rx(core)}" + ("" if prefix else f"([^{_WORD_CHARS}]|$)")
    return f"(positionCaseInsensitive(text, {lit(core)}) > 0 AND match(text, {lit(_any_case(rx))}))"


def _any_case(rx: str) -> str:
    """A regex of any case. As a group: 18.16 tests a leading `(?i)` regex's literal part case-sensitively
    before running it (`(?i)(^|x)Zone` misses "zone"); `(?i:...)` it runs as written."""
    return f"(?i:{rx})"


@dataclass
class Where:
    """A call's filters as one WHERE clause; `since`/`until` already Unix seconds."""

    conds: list[str] = field(default_factory=lambda: ["box != ''"])

    def sql(self, *extra: str) -> str:
        return " WHERE " + " AND ".join([*self.conds, *extra])


def where(call: dict, since: float | None, until: float | None, anchored: bool = False,
          max_chars: int = 200) -> Where:
    w = Where()
    if call.get("text"):
        w.conds += text_conditions(str(call["text"]), anchored, max_chars)
    for key, expr in (("box", "box"), ("host", HOST), ("component", "component")):
        if call.get(key):
            values = call[key] if isinstance(call[key], list) else [call[key]]
            w.conds.append(f"{expr} IN ({', '.join(lit(str(v)) for v in values)})")
    if call.get("level"):
        levels = call["level"] if isinstance(call["level"], list) else [call["level"]]
        w.conds.append(f"{LEVEL} IN ({', '.join(lit(str(v).lower()) for v in levels)})")
    if call.get("template_text") is not None:      # a fleet-wide kind of line: its text (FleetSurface numbers them)
        w.conds.append(f"template = {lit(str(call['template_text']))}")
    elif call.get("template") is not None:         # a box's own template number
        w.conds.append(f"template_id = {int(call['template'])}")
    for name, value in _param_conditions(call):    # "where": {a parameter's name: its value as written}; the
                                                   # lambda's names are its own (aliases are global in ClickHouse)
        w.conds.append(f"arrayExists((w_name, w_text) -> w_name = {lit(name)} AND w_text = {lit(value)}, param_name, param_text)")
    if since is not None:
        w.conds.append(f"time >= {num(since)}")
    if until is not None:
        w.conds.append(f"time <= {num(until)}")
    return w


# --- statements: `t` is the table ("linegate.lines"), `w` the call's Where ------------------------------
def count(t: str, w: Where) -> str:
    return f"SELECT count() AS n FROM {t} FINAL{w.sql()}"


def newest(t: str) -> str:
    return f"SELECT max(time) AS t, count() AS n FROM {t} FINAL WHERE box != ''"


def top_group(t: str, w: Where, by: str, k: int) -> str:
    return (f"SELECT {GROUPS[by]} AS value, count() AS n FROM {t} FINAL{w.sql()}"
            f" GROUP BY value ORDER BY n DESC, value LIMIT {int(k)}")


def top_params(t: str, w: Where, k: int, *, name: str | None = None, pos: int | None = None) -> str:
    """The most frequent parameter texts: of the parameter called `name`, at position `pos`, or else the
    non-numeric ones (query.py's by=value)."""
    if pos is not None:
        return (f"SELECT param_text[{int(pos) + 1}] AS value, count() AS n FROM {t} FINAL"
                f"{w.sql(f'length(param_text) > {int(pos)}')} GROUP BY value ORDER BY n DESC, value LIMIT {int(k)}")
    cond = f"pn = {lit(name)}" if name is not None else "isNull(pv)"
    return (f"SELECT pt AS value, count() AS n FROM {t} FINAL ARRAY JOIN param_text AS pt, param_num AS pv,"
            f" param_name AS pn{w.sql(cond)} GROUP BY value ORDER BY n DESC, value LIMIT {int(k)}")


def stats_named(t: str, w: Where, name: str) -> str:
    return (f"SELECT count() AS n, min(v) AS min, max(v) AS max, avg(v) AS avg, sum(v) AS sum FROM {t} FINAL"
            f" ARRAY JOIN arrayMap(x -> ifNull(x, nan), param_num) AS v, param_name AS pn"
            f"{w.sql(f'pn = {lit(name)}', 'NOT isNaN(v)')}")


def stats_pos(t: str, w: Where, pos: int) -> str:
    v = f"param_num[{int(pos) + 1}]"
    return (f"SELECT count() AS n, min(v) AS min, max(v) AS max, avg(v) AS avg, sum(v) AS sum FROM {t} FINAL"
            f" ARRAY JOIN [ifNull({v}, nan)] AS v{w.sql(f'length(param_num) > {int(pos)}', 'NOT isNaN(v)')}")


def best_pos(t: str, w: Where) -> str:
    """The parameter position with the most distinct numbers (query.py's stats without of/param)."""
    return (f"SELECT pos, uniqExact(v) AS u FROM {t} FINAL ARRAY JOIN arrayMap(x -> ifNull(x, nan), param_num) AS v,"
            f" arrayEnumerate(param_num) AS pos{w.sql('NOT isNaN(v)')} GROUP BY pos ORDER BY u DESC, pos DESC LIMIT 1")


def extreme_line(t: str, w: Where, array_join: str, order: str, conds: tuple[str, ...]) -> str:
    """The line holding the least (ASC) or greatest (DESC) value `v` of `array_join` ("ARRAY JOIN ... AS v")."""
    return (f"SELECT {LINE_COLUMNS}, v FROM {t} FINAL {array_join}{w.sql(*conds)}"
            f" ORDER BY v {order}, box, id LIMIT 1")


def lines(t: str, w: Where, order: str, limit: int) -> str:
    """Matching lines by their own time (`order` ASC or DESC; ties by box and id)."""
    return f"SELECT {LINE_COLUMNS} FROM {t} FINAL{w.sql()} ORDER BY time {order}, box {order}, id {order} LIMIT {int(limit)}"


def span(t: str, w: Where) -> str:
    return f"SELECT min(time) AS lo, max(time) AS hi, count() AS n FROM {t} FINAL{w.sql()}"


def buckets(t: str, w: Where, lo: float, size: float) -> str:
    return (f"SELECT toInt64(floor((time - {num(lo)}) / {num(size)})) AS b, count() AS n FROM {t} FINAL{w.sql()}"
            " GROUP BY b ORDER BY b")

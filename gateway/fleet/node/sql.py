"""The query surface's calls (gateway/pipeline/query.py) compiled to ClickHouse SQL over the fleet's lines table
(gateway/fleet/schema.py): each filter a condition, each op's statement. Pure: strings in, SQL out; knows
nothing about HTTP or how results are shaped. SQL that ClickHouse 18.16 and current releases both run: no
query parameters (18.16 has none: every value is a quoted literal) and re2 regexes (`match`).

Each line once, without FINAL. A line is (box, id), resent copies of it are the same line, and the Distributed
table shards by a hash of (box, id), so all copies of a line sit on one shard. 18.16 runs FINAL as one
single-threaded merge of every row before WHERE (seconds per statement over millions of lines), so the
statements here filter first and dedupe what matched: counts are `uniqExact(id)` per box, lines are
`LIMIT 1 BY box, id`, figures that copies cannot change (min, max, distinct values, a line holding the
extreme) read the rows as they are. A `PerShard` statement is correct as written on any table; its settings
(`distributed_group_by_no_merge`) let each shard run the inner statement to the end, so that a shard sends
its counts (or its first lines), not every matching id, and the outer statement adds them up.
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


class PerShard(str):
    """A statement whose read of the lines table each shard may finish alone (module doc): the node sends
    `settings` with it. Without them it is still right, only slower (the shards send every matching id)."""

    settings = {"distributed_group_by_no_merge": 1}


def settings(statement: str, caps: dict) -> dict:
    """What to send with `statement`: the caps, and a PerShard statement's own settings."""
    return {**caps, **getattr(statement, "settings", {})}


def deduped_lines(columns: str, t: str, where_sql: str, order: str, limit: int) -> PerShard:
    """`columns` (naming box and id, and what `order` sorts by) of the first `limit` matching lines in `order`,
    each line once: each shard's first, copies dropped (LIMIT 1 BY), then the shards' first together."""
    inner = f"SELECT {columns} FROM {t}{where_sql} ORDER BY {order} LIMIT 1 BY box, id LIMIT {int(limit)}"
    return PerShard(f"SELECT * FROM ({inner}) ORDER BY {order} LIMIT {int(limit)}")


# --- statements: `t` is the table ("linegate.lines"), `w` the call's Where ------------------------------
def count(t: str, w: Where) -> PerShard:
    """Matching lines, each once: distinct ids per box (a line's copies share box and id), summed."""
    return PerShard(f"SELECT sum(c) AS n FROM (SELECT uniqExact(id) AS c FROM {t}{w.sql()} GROUP BY box)")


def newest(t: str) -> str:
    """The newest line's time, and n > 0 if there is a line (copies change neither)."""
    return f"SELECT max(time) AS t, count() AS n FROM {t} WHERE box != ''"


def _top(t: str, value: str, rest: str, k: int, unit: str = "id") -> PerShard:
    """The k most frequent `value`s of the rows `rest` (FROM's tail: ARRAY JOIN, WHERE) selects, each counted
    once per distinct `unit` of a box (id: a line; `id, pos`: a line's parameter), summed over boxes."""
    return PerShard(f"SELECT value, sum(c) AS n FROM (SELECT {value} AS value, uniqExact({unit}) AS c FROM {t}{rest}"
                    f" GROUP BY value, box) GROUP BY value ORDER BY n DESC, value LIMIT {int(k)}")


def top_group(t: str, w: Where, by: str, k: int) -> PerShard:
    """The k most frequent values of a field, each row with `total`: the matching lines (each has one value of
    the field, so the groups' sum; the same scan as the top, not a second count)."""
    groups = (f"SELECT value, sum(c) AS n FROM (SELECT {GROUPS[by]} AS value, uniqExact(id) AS c FROM {t}{w.sql()}"
              f" GROUP BY value, box) GROUP BY value")
    return PerShard(f"SELECT tupleElement(g, 1) AS value, tupleElement(g, 2) AS n, total FROM (SELECT"
                    f" groupArray((value, n)) AS gs, sum(n) AS total FROM ({groups})) ARRAY JOIN gs AS g"
                    f" ORDER BY n DESC, value LIMIT {int(k)}")


def top_params(t: str, w: Where, k: int, *, name: str | None = None, pos: int | None = None) -> PerShard:
    """The most frequent parameter texts: of the parameter called `name`, at position `pos`, or else the
    non-numeric ones (query.py's by=value: each parameter of a line counts)."""
    if pos is not None:
        return _top(t, f"param_text[{int(pos) + 1}]", w.sql(f"length(param_text) > {int(pos)}"), k)
    cond = f"pn = {lit(name)}" if name is not None else "isNull(pv)"
    return _top(t, "pt", " ARRAY JOIN param_text AS pt, param_num AS pv, param_name AS pn,"
                f" arrayEnumerate(param_text) AS pp{w.sql(cond)}", k, unit="id, pp")


def _stats(t: str, rest: str) -> PerShard:
    """count, min, max, avg, sum of the numbers `v` that `rest` (ARRAY JOIN ... AS v, pp; WHERE) selects: per
    shard each (line, position) once (groupUniqArray drops a copy's same tuple), then over the shards."""
    vs = "arrayMap(x -> x.4, groupUniqArray((box, id, pp, v)))"      # 18.16 has no arrayMin: arrayReduce
    inner = (f"SELECT length({vs}) AS c, arrayReduce('sum', {vs}) AS s, arrayReduce('min', {vs}) AS lo,"
             f" arrayReduce('max', {vs}) AS hi FROM {t}{rest}")
    return PerShard(f"SELECT sum(c) AS n, min(lo) AS min, max(hi) AS max, if(sum(c) > 0, sum(s) / sum(c), 0) AS avg,"
                    f" sum(s) AS sum FROM ({inner}) WHERE c > 0")


def stats_named(t: str, w: Where, name: str) -> PerShard:
    return _stats(t, f" ARRAY JOIN arrayMap(x -> ifNull(x, nan), param_num) AS v, param_name AS pn,"
                  f" arrayEnumerate(param_num) AS pp{w.sql(f'pn = {lit(name)}', 'NOT isNaN(v)')}")


def stats_pos(t: str, w: Where, pos: int) -> PerShard:
    v = f"param_num[{int(pos) + 1}]"
    return _stats(t, f" ARRAY JOIN [ifNull({v}, nan)] AS v, [{int(pos) + 1}] AS pp"
                  f"{w.sql(f'length(param_num) > {int(pos)}', 'NOT isNaN(v)')}")


def best_pos(t: str, w: Where) -> str:
    """The parameter position with the most distinct numbers (query.py's stats without of/param; copies add
    no distinct number)."""
    return (f"SELECT pos, uniqExact(v) AS u FROM {t} ARRAY JOIN arrayMap(x -> ifNull(x, nan), param_num) AS v,"
            f" arrayEnumerate(param_num) AS pos{w.sql('NOT isNaN(v)')} GROUP BY pos ORDER BY u DESC, pos DESC LIMIT 1")


def extreme_line(t: str, w: Where, array_join: str, order: str, conds: tuple[str, ...]) -> str:
    """The line holding the least (ASC) or greatest (DESC) value `v` of `array_join` ("ARRAY JOIN ... AS v");
    a copy is the same line."""
    return (f"SELECT {LINE_COLUMNS}, v FROM {t} {array_join}{w.sql(*conds)}"
            f" ORDER BY v {order}, box, id LIMIT 1")


def lines(t: str, w: Where, order: str, limit: int) -> PerShard:
    """Matching lines by their own time (`order` ASC or DESC; ties by box and id), each once."""
    return deduped_lines(LINE_COLUMNS, t, w.sql(), f"time {order}, box {order}, id {order}", limit)


def line_at(t: str, w: Where, time: float, order: str) -> str:
    """The first matching line (`order` ASC) or the last (DESC) of those at `time` (span's lo or hi), by box
    and id: ClickHouse reads `time` first (PREWHERE), so this is cheap where lines() sorts every match."""
    return f"SELECT {LINE_COLUMNS} FROM {t}{w.sql(f'time = {num(time)}')} ORDER BY box {order}, id {order} LIMIT 1"


def span(t: str, w: Where) -> PerShard:
    return PerShard(f"SELECT min(lo) AS lo, max(hi) AS hi, sum(c) AS n FROM (SELECT min(time) AS lo, max(time) AS hi,"
                    f" uniqExact(id) AS c FROM {t}{w.sql()} GROUP BY box)")


def buckets(t: str, w: Where, lo: float, size: float) -> PerShard:
    return PerShard(f"SELECT b, sum(c) AS n FROM (SELECT toInt64(floor((time - {num(lo)}) / {num(size)})) AS b,"
                    f" uniqExact(id) AS c FROM {t}{w.sql()} GROUP BY b, box) GROUP BY b ORDER BY b")

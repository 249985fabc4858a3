"""The query surface's calls (gateway/pipeline/query.py) compiled to ClickHouse SQL over the fleet's lines table
(gateway/fleet/schema.py): each filter a condition, each op's statement. Pure: strings in, SQL out; knows
nothing about HTTP or how results are shaped. SQL that ClickHouse 18.16 and current releases both run: no
query parameters (18.16 has none: every value is a quoted literal) and re2 regexes (`match`).

Each line once, without FINAL. A line is (box, id), resent copies of it are the same line, and the Distributed
table shards by a hash of (box, id), so all copies of a line sit on one shard. 18.16 runs FINAL as one
single-threaded merge of every row before WHERE (seconds per statement over millions of lines), so the
statements here filter first and dedupe what matched. A line has a second copy only if one of its copies says
`resent` (the shipper marks every line it may have sent before, gateway/fleet/shipper.py), so a count is
`count()` outside a few `Ranges` of ids (those holding a `resent` row, read once by the node) and
`uniqExact(id)` per box inside them; each statement also counts the `resent` rows it met outside the ranges
(`stray`), which the node reads as "ranges out of date": it reads them again and reruns (FleetSurface.counted).
Ranges None: every line may have copies (uniqExact over every match: right whatever the shipper did). Lines are
`LIMIT 1 BY box, id`; figures that copies cannot change (min, max, distinct values, a line holding the
extreme) read the rows as they are. A `PerShard` statement is correct as written on any table; its settings
(`distributed_group_by_no_merge`) let each shard run the inner statement to the end, so that a shard sends
its counts (or its first lines), not every matching id, and the outer statement adds them up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gateway.pipeline.query import _param_conditions
from gateway.pipeline.query_text import CLOCK_PART, DOTTED_NUMBER, PLACEHOLDER, _line_end_regex

LEVELS = ('emergency', 'alert', 'critical', 'error', 'warning', 'notice', 'info', 'debug')    # by syslog code
LEVEL = f"ifNull(level, arrayElement([{', '.join(repr(v) for v in LEVELS)}], toUInt64(severity) + 1))"
HOST = "ifNull(line_host, host)"
TEMPLATE = "if(template = '', concat('template ', toString(ifNull(template_id, 0))), template)"
_CLOCK = "toString(toDateTime(toUInt32(time), 'UTC'))"      # "2026-12-01 08:05:09": the line's own time, UTC
_NEXT_HOUR = "toString(toDateTime(toUInt32(time) + 3600, 'UTC'))"
GROUPS = {"box": "box", "host": HOST, "component": "ifNull(component, '')", "level": LEVEL, "template": TEMPLATE,
          # query.py's day and hour texts: "2026-12-01", "2026-12-01 08:00-09:00"
          "day": f"substring({_CLOCK}, 1, 10)",
          "hour": f"concat(substring({_CLOCK}, 1, 13), ':00-', substring({_NEXT_HOUR}, 12, 2), ':00')"}
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
    """`word` (ASCII) as whole tokens in the text, any case; a trailing * makes it a prefix (FTS5's `word*`).
    Read in `text_lower` (the text with ASCII folded, gateway/fleet/schema.py): a plain substring search and a
    regex without `(?i)`, whose literal ClickHouse looks for first (4x faster than positionCaseInsensitive and
    a case-free regex on every line)."""
    prefix = word.endswith("*")
    core = word.rstrip("*")
    core = (re.sub(rf"^[^{_WORD_CHARS}]+|[^{_WORD_CHARS}]+$", "", core) or core).lower()   # FTS drops edge punctuation
    rx = f"(^|[^{_WORD_CHARS}]){_rx(core)}" + ("" if prefix else f"([^{_WORD_CHARS}]|$)")
    if not prefix and DOTTED_NUMBER.fullmatch(core):    # a number: not a piece of an address or
        rx = f"(^|[^{_WORD_CHARS}.]){_rx(core)}([^{_WORD_CHARS}.]|\\.([^{_WORD_CHARS}]|$)|$)"   # version (query.py)
    if not prefix and CLOCK_PART.fullmatch(core):       # nor of a clock time or a date (outside_dotted)
        w = _WORD_CHARS
        rx = (f"(^|[^{w}.:\\-]|[^0-9][:\\-]){_rx(core)}"
              f"([^{w}.:\\-]|[:\\-]([^0-9]|$)|\\.([^{w}]|$)|$)")
    return f"(position(text_lower, {lit(core)}) > 0 AND match(text_lower, {lit(rx)}))"


def _any_case(rx: str) -> str:
    """A regex of any case. As a group: 18.16 tests a leading `(?i)` regex's literal part case-sensitively
    before running it (`(?i)(^|x)Zone` misses "zone"); `(?i:...)` it runs as written."""
    return f"(?i:{rx})"


@dataclass
class Where:
    """A call's filters as one WHERE clause; `since`/`until` already Unix seconds."""

    conds: list[str] = field(default_factory=lambda: ["box != ''"])

    def sql(self, *extra: str) -> str:
        """The clause; `box != ''` (always true: a WHERE for a call without filters) only when alone."""
        conds = [*self.conds, *extra]
        return " WHERE " + " AND ".join([c for c in conds if c != "box != ''"] or conds)


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
        w.conds.append(level_condition([str(v).lower() for v in levels]))
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


def level_condition(levels: list[str]) -> str:
    """LEVEL IN levels without computing LEVEL per line: the header's word, or, where there is none, the
    severity's code (3x faster than the ifNull over every line)."""
    codes = [str(i) for i, name in enumerate(LEVELS) if name in levels]
    words = f"level IN ({', '.join(lit(v) for v in levels)})"
    return f"({words} OR (isNull(level) AND severity IN ({', '.join(codes)})))" if codes else words


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


Ranges = tuple[tuple[str, int, int], ...] | None    # (box, lo, hi): ids that may have copies; None: every id
MAX_RANGES = 32               # more are merged (a wider range only dedupes more rows)
RANGE_IDS = 65536             # resent rows are read back as ranges of at most this many ids


def dirty_ranges(t: str) -> str:
    """Where `resent` rows are: (box, lo, hi) per box and block of RANGE_IDS ids (the column is a byte a row)."""
    return (f"SELECT box, min(id) AS lo, max(id) AS hi FROM {t} WHERE resent = 1"
            f" GROUP BY box, intDiv(id, {RANGE_IDS}) ORDER BY box, lo")


def merged_ranges(rows: list[tuple[str, int, int]], most: int = MAX_RANGES) -> Ranges:
    """At most `most` ranges covering `rows` (each box's nearest ranges joined first), but at least one per box
    (a range can not span boxes): a wider range only dedupes more rows."""
    out = sorted((str(b), int(lo), int(hi)) for b, lo, hi in rows)
    while len(out) > most:
        gaps = [(out[i + 1][1] - out[i][2], i) for i in range(len(out) - 1) if out[i][0] == out[i + 1][0]]
        if not gaps:
            break
        _, i = min(gaps)
        out[i:i + 2] = [(out[i][0], out[i][1], max(out[i][2], out[i + 1][2]))]
    return tuple(out)


def _in_ranges(ranges: Ranges) -> str:
    if ranges is None:
        return "1"
    return " OR ".join(f"(box = {lit(b)} AND id >= {int(lo)} AND id <= {int(hi)})" for b, lo, hi in ranges) or "0"


def _tally(ranges: Ranges, unit: str = "id") -> tuple[str, str, str]:
    """(c, stray, by box) for a SELECT over matching rows: c counts each line (each distinct `unit` of a box)
    once, stray the `resent` rows outside `ranges`, by box the GROUP BY's extra key (uniqExact is per box)."""
    d = _in_ranges(ranges)
    if d == "0":
        return "count()", "countIf(resent = 1)", ""
    if d == "1":
        return f"uniqExact({unit})", "toUInt64(0)", ", box"
    return f"countIf(NOT ({d})) + uniqExactIf({unit}, {d})", f"countIf(resent = 1 AND NOT ({d}))", ", box"


# --- statements: `t` is the table ("linegate.lines"), `w` the call's Where, `ranges` the Ranges --------
def count(t: str, w: Where, ranges: Ranges = None) -> PerShard:
    """Matching lines, each once (module doc), and the stray resent rows met."""
    c, r, by_box = _tally(ranges)
    group = f" GROUP BY {by_box[2:]}" if by_box else ""
    return PerShard(f"SELECT sum(c) AS n, sum(r) AS stray FROM (SELECT {c} AS c, {r} AS r FROM {t}{w.sql()}{group})")


def box_stats(t: str, ranges: Ranges = None) -> PerShard:
    """Per box: its lines (each once), first and last id, newest arrival (what /api/stats shows)."""
    c, r, _ = _tally(ranges)
    return PerShard(f"SELECT box, sum(c) AS lines, min(lo) AS first_id, max(hi) AS last_id, max(t) AS newest_ts,"
                    f" sum(r) AS stray FROM (SELECT box, {c} AS c, {r} AS r, min(id) AS lo, max(id) AS hi, max(ts) AS t"
                    f" FROM {t} WHERE box != '' GROUP BY box) GROUP BY box ORDER BY box")


def newest(t: str) -> str:
    """The newest line's time, and n > 0 if there is a line (copies change neither)."""
    return f"SELECT max(time) AS t, count() AS n FROM {t} WHERE box != ''"


def _top(t: str, value: str, rest: str, k: int, ranges: Ranges, unit: str = "id") -> PerShard:
    """The k most frequent `value`s of the rows `rest` (FROM's tail: ARRAY JOIN, WHERE) selects, each counted
    once per distinct `unit` of a box (id: a line; `id, pos`: a line's parameter), summed over boxes; each row
    with `total` (the groups' sum) and `stray` (module doc), from the same scan."""
    c, r, by_box = _tally(ranges, unit)
    groups = (f"SELECT value, sum(c) AS n, sum(r) AS r FROM (SELECT {value} AS value, {c} AS c, {r} AS r FROM {t}{rest}"
              f" GROUP BY value{by_box}) GROUP BY value")
    return PerShard(f"SELECT tupleElement(g, 1) AS value, tupleElement(g, 2) AS n, total, stray FROM (SELECT"
                    f" groupArray((value, n)) AS gs, sum(n) AS total, sum(r) AS stray FROM ({groups}))"
                    f" ARRAY JOIN gs AS g ORDER BY n DESC, value LIMIT {int(k)}")


def top_group(t: str, w: Where, by: str, k: int, ranges: Ranges = None) -> PerShard:
    """The k most frequent values of a field, each row with `total`: the matching lines (each has one value of
    the field, so the groups' sum; the same scan as the top, not a second count)."""
    return _top(t, GROUPS[by], w.sql(), k, ranges)


def top_params(t: str, w: Where, k: int, *, name: str | None = None, pos: int | None = None,
               ranges: Ranges = None, numbers: bool = False) -> PerShard:
    """The most frequent parameter texts: of the parameter called `name`, at position `pos`, or else the
    non-numeric ones (query.py's by=value: each parameter of a line counts), with `numbers` every one."""
    if pos is not None:
        return _top(t, f"param_text[{int(pos) + 1}]", w.sql(f"length(param_text) > {int(pos)}"), k, ranges)
    cond = f"pn = {lit(name)}" if name is not None else "1 = 1" if numbers else "isNull(pv)"
    return _top(t, "pt", " ARRAY JOIN param_text AS pt, param_num AS pv, param_name AS pn,"
                f" arrayEnumerate(param_text) AS pp{w.sql(cond)}", k, ranges, unit="id, pp")


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


def lines_at(t: str, w: Where, times: tuple[float, float], limit: int) -> str:
    """At most `limit` matching lines whose time is one of `times` (span's lo and hi, in one scan): the node
    picks the first at lo and the last at hi by box and id (copies are the same line). The times as PREWHERE:
    18.16 would move the text filter there instead and read every line (5x slower)."""
    return (f"SELECT {LINE_COLUMNS} FROM {t} PREWHERE time IN ({', '.join(num(x) for x in times)}){w.sql()}"
            f" LIMIT {int(limit)}")


def span(t: str, w: Where, ranges: Ranges = None) -> PerShard:
    """The first and last time and the count of the matching lines (a shard without a match gives a time of
    0: left out by `c > 0`)."""
    c, r, by_box = _tally(ranges)
    group = f" GROUP BY {by_box[2:]}" if by_box else ""
    return PerShard(f"SELECT minIf(lo, c > 0) AS lo, maxIf(hi, c > 0) AS hi, sum(c) AS n, sum(r) AS stray FROM (SELECT"
                    f" min(time) AS lo, max(time) AS hi, {c} AS c, {r} AS r FROM {t}{w.sql()}{group})")


def buckets(t: str, w: Where, lo: float, size: float, ranges: Ranges = None) -> PerShard:
    c, r, by_box = _tally(ranges)
    return PerShard(f"SELECT b, sum(c) AS n, sum(r) AS stray FROM (SELECT toInt64(floor((time - {num(lo)}) /"
                    f" {num(size)})) AS b, {c} AS c, {r} AS r FROM {t}{w.sql()} GROUP BY b{by_box}) GROUP BY b ORDER BY b")

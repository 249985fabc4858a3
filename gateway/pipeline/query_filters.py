"""The WHERE clause of a query call (gateway.pipeline.query): its text (full-text words matched as
tokens of their own where the index splits a name, a pattern's pieces, Chinese substrings), fields,
template, named parameters and time window. A mixin of QuerySurface, which gives it execute(),
counts() and _newest_time().
"""

from __future__ import annotations

import calendar
import math
import re
import time
from typing import Any

from gateway.ingest.header import match_ts, parse_ts
from gateway.pipeline.query_text import DOTTED_NUMBER, PLACEHOLDER, _like, _line_end_regex, outside_dotted
from gateway.pipeline.store_counts import TIME
from gateway.pipeline.store_read import LINE_HOST, fts_query

MAX_TEXT_CHARS = 200
JOINED_ID = re.compile(r"[A-Za-z0-9]+(?:_[A-Za-z0-9]+)+")    # an id of parts joined by "_" (with a digit)
_LEVEL = ("coalesce(l.level, CASE l.severity WHEN 0 THEN 'emergency' WHEN 1 THEN 'alert' WHEN 2 THEN 'critical'"
          " WHEN 3 THEN 'error' WHEN 4 THEN 'warning' WHEN 5 THEN 'notice' WHEN 6 THEN 'info' ELSE 'debug' END)")
_HOST = LINE_HOST   # the line's host: one meaning for /api/logs and this surface (store_read.py)
_TIME = TIME          # a line's own time, else its arrival (store_counts.py)


class QueryError(ValueError):
    """A call the surface cannot run (unknown op, bad argument); run() turns it into {"error"}."""


class CallFilters:
    """_filters(call) -> (" WHERE ...", args); _window(call) -> (since, until)."""

    def _filters(self, call: dict[str, Any], anchored: bool = False) -> tuple[str, list]:
        where: list[str] = []
        args: list = []
        ids: list[str] = []
        text = call.get("text")
        if text:
            text = str(text)[:MAX_TEXT_CHARS]
            pieces = [p.strip() for p in PLACEHOLDER.split(text)]
            literal = " ".join(p for p in pieces if p)
            if literal.isascii() and (q := fts_query(literal)) is not None:
                where.append("l.id IN (SELECT rowid FROM logs_fts WHERE logs_fts MATCH ?)")
                args.append(q)
                for word in literal.split():      # the index splits at dots: "123" is not in "123.235.32.19"
                    if DOTTED_NUMBER.fullmatch(word):
                        where.append("l.text REGEXP ?")
                        args.append(outside_dotted(word))
                ids = [w for w in literal.split() if JOINED_ID.fullmatch(w) and re.search(r"\d", w)] \
                    if len(pieces) == 1 else []
            if len(pieces) > 1:                 # a pattern: its pieces in order ("seconds.  Will" as
                where.append("l.text LIKE ? ESCAPE '\\'")    # "seconds. Will": spacing is not text)
                args.append("%" + "%".join(_like(w) for p in pieces for w in p.split()) + "%")
                if anchored:
                    where.append("l.text REGEXP ?")
                    args.append(_line_end_regex(text))
            elif not literal.isascii() or not args:
                for word in text.split() or [text]:
                    where.append("l.text LIKE ? ESCAPE '\\'")
                    args.append("%" + _like(word) + "%")
                    if word.isascii() and re.search(r"\w", word):   # a Latin word or number: whole tokens only
                        where.append("l.text REGEXP ?")           # ("200" is not inside "req-2001")
                        args.append(r"(?<![\w])" + re.escape(word) + r"(?![\w])")
        for key, expr in (("host", _HOST), ("component", "l.component")):
            if call.get(key):
                where.append(f"{expr} = ?"); args.append(str(call[key]))
        if call.get("level"):
            levels = call["level"] if isinstance(call["level"], list) else [call["level"]]
            where.append(f"{_LEVEL} IN ({', '.join('?' * len(levels))})")
            args += [str(v).lower() for v in levels]
        if call.get("template") is not None:
            where.append("l.template_id = ?"); args.append(_int(call, "template"))
        for name, value in _param_conditions(call):
            where.append("EXISTS (SELECT 1 FROM params p WHERE p.line_id = l.id AND p.name = ? AND p.text = ?)")
            args += [name, value]
        since, until = self._window(call)
        if since is not None:
            where.append(f"{_TIME} >= ?"); args.append(float(since))
            floor = self.counts().since_floor(float(since))   # no index serves the line's time: the
            if floor:                                          # ids below the window's first line go unread
                where.append("l.id > ?"); args.append(floor)
        if until is not None:
            where.append(f"{_TIME} <= ?"); args.append(float(until))
        if ids:
            self._whole_ids(ids, where, args)
        return (" WHERE " + " AND ".join(where)) if where else "", args

    def _whole_ids(self, ids: list[str], where: list[str], args: list) -> None:
        """Ids joined by "_" ("broadcast_29") are matched whole, not as the first parts of longer ones
        ("broadcast_29_piece0": the index splits at "_"), when some line the other filters keep holds them
        whole; else as parts too ("rdd_2": its partitions rdd_2_0, rdd_2_1 ...). The tail of a longer id
        is the id too ("m_000002_0" of attempt_..._m_000002_0)."""
        whole = [r"(?<![A-Za-z0-9.])" + re.escape(w) + r"(?![\w]|\.\w)" for w in ids]
        conds = where + ["l.text REGEXP ?"] * len(whole)
        rows, _ = self.execute(f"SELECT 1 FROM logs l WHERE {' AND '.join(conds)} LIMIT 1", [*args, *whole])
        if rows:
            where += ["l.text REGEXP ?"] * len(whole)
            args += whole

    def _window(self, call: dict[str, Any]) -> tuple[float | None, float | None]:
        """(since, until) of the call's time filters as Unix seconds; None: open."""
        since, until = self._time_arg(call, "since"), self._time_arg(call, "until")
        if since is not None and until is not None and 0 <= until - since < 1 and \
                re.fullmatch(r".*\d:\d\d", str(call.get("until")).strip()):
            until = since + 59.999      # since and until one hh:mm ("within 18:07"): that minute
        if call.get("last_minutes") is not None:
            newest = self._newest_time()
            if newest is not None:
                since = newest - 60.0 * _num(call, "last_minutes")
        return since, until

    def _time_arg(self, call: dict[str, Any], key: str) -> float | None:
        """since/until as Unix seconds: a number, or a time as text (module doc)."""
        v = call.get(key)
        if v is None or isinstance(v, (int, float)) and not isinstance(v, bool):
            return None if v is None else _num(call, key)
        text = " ".join(str(v).split())
        if re.fullmatch(r"[-+]?\d+(\.\d+)?", text):
            return _num({key: text}, key)
        newest = self.execute(f"SELECT max({_TIME}) FROM logs l")[0][0][0]
        ref = time.gmtime(newest if newest is not None else time.time())
        m = match_ts(text, 0)
        t = parse_ts(m, ref.tm_year) if m and m.end() == len(text) else None
        if t is None and m is not None and m.end() == len(text) and m.groupdict().get("H"):
            # a time of day alone: on the newest line's day
            g = m.groupdict()
            t = float(calendar.timegm((ref.tm_year, ref.tm_mon, ref.tm_mday, int(g["H"]), int(g["M"]),
                                       int(g.get("S") or 0), 0, 0, 0)))
        if t is None:       # a date (its year left out: the newest line's), a date and hh:mm, or hh:mm alone
            d = re.fullmatch(r"(?:(?:(\d{4})-)?(\d{1,2})-(\d{1,2}))?[ T]?(?:(\d{1,2}):(\d{2})(?::(\d{2}))?)?", text)
            if d is None or not text:
                raise QueryError(f"{key}={v!r} is not a time this store can read")
            y, mo, da = (int(d.group(1) or ref.tm_year), int(d.group(2)), int(d.group(3))) if d.group(2) else \
                (ref.tm_year, ref.tm_mon, ref.tm_mday)
            hh, mi, ss = (int(d.group(4)), int(d.group(5)), int(d.group(6) or 0)) if d.group(4) else (0, 0, 0)
            t = float(calendar.timegm((y, mo, da, hh, mi, ss, 0, 0, 0)))
            if key == "until":
                t += 0.999 if d.group(4) else 86399.999     # that second; a date alone: the whole day
            return t
        if key == "until" and m is not None and not m.groupdict().get("H"):
            t += 86399.999                      # "until 2015-10-18": a date alone is the whole day
        elif key == "until" and "." not in text.rsplit(":", 1)[-1] and "," not in text:
            t += 0.999                          # "until 22:16:34" includes that second
        return t


def _param_conditions(call: dict) -> list[tuple[str, str]]:
    """"where": {parameter name: its value as written} (fields.param_names), each one a condition."""
    conds = call.get("where")
    if conds is None:
        return []
    if not isinstance(conds, dict) or len(conds) > 4 or not all(
            isinstance(k, str) and 0 < len(k) <= 48 and isinstance(v, (str, int, float)) and not isinstance(v, bool)
            for k, v in conds.items()):
        raise QueryError("where: {parameter name: value}, at most 4")
    return [(k.lower(), str(v)) for k, v in conds.items()]


def _int(call: dict, key: str, default: int | None = None) -> int:
    try:
        return int(call.get(key, default) if call.get(key) is not None else default)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise QueryError(f"{key}={call.get(key)!r} is not an integer") from None


def _num(call: dict, key: str, default: float | None = None) -> float:
    try:
        v = float(call.get(key) if call.get(key) is not None else default)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise QueryError(f"{key}={call.get(key)!r} is not a number") from None
    if not math.isfinite(v):
        raise QueryError(f"{key}={v} is not finite")
    return v

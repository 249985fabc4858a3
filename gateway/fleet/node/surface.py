"""The fleet node's query surface: run(call) -> dict like gateway.pipeline.query.QuerySurface's, over the plant's
ClickHouse (every box), with `box` as a filter and a top_k grouping. Statements come from sql.py and run as
the read-only user under max_execution_time and max_result_rows; what SQL cannot say (top_k by IP or by the
word before a value, stats of a number found by regex) is read from at most row_cap matching lines, as on the
box. Knows nothing about the model.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from typing import Any, Callable

from gateway.fleet.node import catalog, sql
from gateway.fleet.schema import LINES
from gateway.fleet.settings import FleetSettings
from gateway.pipeline.query import (BY_FIELDS, IPV4, LINE_CHARS, MAX_BUCKETS, MAX_LINES, MAX_TEXT_CHARS, OPS,
                                    ROW_CAP, TOP_K_MAX, QueryError, QuerySurface, _int, _nice_bucket, _num)
from gateway.pipeline.query_text import PLACEHOLDER, _add_captures, _number_regex, numbers_stats

FLEET_BY = (*BY_FIELDS, "box")
BOXES_TTL_S = 30.0            # the box list is re-read at most this often
BOXES_SHOWN = 20              # a count across boxes names at most this many, most lines first
LINES_AT = 1_000              # first_last reads at most this many lines at its first and last time at once
Rows = Callable[[str, dict], list[dict]]      # (sql, settings) -> rows as dicts (ClickHouseHttp.rows)


class _Newest:
    """What QuerySurface._time_arg reads (the newest line's time) from a figure already known: the box's
    reading of a time as text is reused as it is (gateway/pipeline/query.py)."""

    def __init__(self, newest: float | None) -> None:
        self.newest = newest

    def execute(self, _sql: str, _args=()) -> tuple[list[tuple], bool]:
        return [(self.newest,)], False


class FleetSurface:
    """run(call) -> dict. `rows` runs one statement (ClickHouseHttp.rows of the read-only user, or chDB in
    tests); `settings` are sent with each: the caps."""

    def __init__(self, rows: Rows, database: str = "linegate", row_cap: int = ROW_CAP,
                 max_execution_time_s: float = 10.0, max_result_rows: int = 100_000) -> None:
        self._rows = rows
        self.table = f"{database}.{LINES}"
        self.row_cap = int(row_cap)
        self.caps = {"max_execution_time": max(1, round(max_execution_time_s)),
                     "max_result_rows": int(max_result_rows), "result_overflow_mode": "throw"}
        self.numbers = catalog.Numbers()       # the kinds of line (template texts) as the call's `template`
        self._ranges: sql.Ranges | bool = False   # where lines may have copies (sql.dirty_ranges); False: not read
        self._boxes: tuple[float, list[str]] = (-BOXES_TTL_S, [])

    @classmethod
    def from_settings(cls, s: FleetSettings) -> "FleetSurface":
        from gateway.fleet.client import ClickHouseHttp

        client = ClickHouseHttp(s.urls, s.reader_user, s.reader_password, s.max_execution_time_s + 5)
        surface = cls(client.rows, s.database, max_execution_time_s=s.max_execution_time_s,
                      max_result_rows=s.max_result_rows)
        surface.close = client.close          # type: ignore[method-assign]
        return surface

    def close(self) -> None:
        """Closes the connections of a surface built by from_settings (others own theirs)."""

    def q(self, statement: str) -> list[dict]:
        """The rows of one statement, sent with the caps (and a sql.PerShard statement's settings)."""
        return self._rows(statement, sql.settings(statement, self.caps))

    def execute(self, statement: str, args: tuple | list = ()) -> tuple[list[tuple], bool]:
        """QuerySurface.execute for the answer layer's own reads (catalog.py): (rows, truncated)."""
        return catalog.execute(self, statement, args)

    def boxes(self) -> list[str]:
        """The plant's boxes, most lines first (re-read at most every BOXES_TTL_S; [] while unreachable):
        what the chat's call may filter and count by."""
        read, boxes = self._boxes
        if time.monotonic() - read > BOXES_TTL_S:
            try:
                boxes = [r["value"] for r in self.counted(lambda rg: sql.top_group(self.table, sql.Where(), "box", 1000, rg))]
            except (RuntimeError, ConnectionError):
                boxes = []
            self._boxes = (time.monotonic(), boxes)
        return boxes

    def counted(self, statement: Callable[[sql.Ranges], str]) -> list[dict]:
        """The rows of a counting statement (sql.count, span, top, buckets) made with the ranges where lines
        may have copies: read once, again when a statement met a `resent` row outside them (a resend since),
        and, should that keep happening (a box resending meanwhile), every match deduped (ranges None)."""
        for _ in range(3):
            if self._ranges is False:
                self._ranges = sql.merged_ranges([(r["box"], r["lo"], r["hi"]) for r in self.q(sql.dirty_ranges(self.table))])
            rows = self.q(statement(self._ranges))
            if not any(int(r.get("stray") or 0) for r in rows):
                return rows
            self._ranges = False
        return self.q(statement(None))

    def _resolved(self, call: dict[str, Any]) -> dict[str, Any]:
        """The call with its `template` (a number of self.numbers) as that kind's text."""
        if call.get("template") is None:
            return call
        number = _int(call, "template")
        text = self.numbers.text(number)
        if text is None:                       # numbers come with the kinds read: read them once
            self.execute("SELECT l.template_id, t.template, count(*) FROM logs l JOIN templates t", [5000])
            text = self.numbers.text(number)
        if text is None:
            raise QueryError(f"template={number}: no kind of line has this number on the fleet node")
        return {**call, "template_text": text}

    # --- calls -------------------------------------------------------------------------------------
    def run(self, call: dict[str, Any]) -> dict[str, Any]:
        """The call's result: {"call": call, ...}; {"error"} for a call that cannot run."""
        out: dict[str, Any] = {"call": dict(call)}
        try:
            op = call.get("op")
            if op not in OPS:
                raise QueryError(f"unknown op {op!r}; one of {', '.join(OPS)}")
            call = self._resolved(call)
            since, until = self._times(call)
            text = str(call.get("text") or "")
            out.update(self._op(op, call, since, until))
            words = [] if PLACEHOLDER.search(text) else text.split()
            if out.get("count") == 0 and len(words) > 1:      # relaxed as on the box (query.py)
                alive = [w for w in words if self._n(sql.where({**call, "text": w}, since, until))]
                for n in range(min(len(alive), len(words) - 1), 0, -1):
                    relaxed = {**call, "text": " ".join(alive[:n])}
                    found = getattr(self, "_" + op)(relaxed, sql.where(relaxed, since, until, max_chars=MAX_TEXT_CHARS))
                    if found.get("count"):
                        out.update(found, text_relaxed_to=relaxed["text"])
                        break
            _add_captures(out, text)
            if out.get("by") == "box" and op == "count":       # counted per box: said as a top_k by box
                out["call"] = {**out["call"], "op": "top_k", "by": "box", "counted": "count"}
        except (QueryError, RuntimeError, ConnectionError) as exc:
            out["error"] = str(exc)
        if out.get("count") == 0 and "error" not in out:
            out["no_match"] = True
        return out

    def _op(self, op: str, call: dict, since: float | None, until: float | None) -> dict:
        if PLACEHOLDER.search(str(call.get("text") or "")):     # a pattern: first as the end of a line
            out = getattr(self, "_" + op)(call, sql.where(call, since, until, anchored=True, max_chars=MAX_TEXT_CHARS))
            if out.get("count"):
                return out
        return getattr(self, "_" + op)(call, sql.where(call, since, until, max_chars=MAX_TEXT_CHARS))

    def _times(self, call: dict) -> tuple[float | None, float | None]:
        keys = [k for k in ("since", "until") if call.get(k) is not None]
        needs_newest = call.get("last_minutes") is not None or any(not _is_number(call[k]) for k in keys)
        newest = None
        if needs_newest:
            r = self.q(sql.newest(self.table))[0]
            newest = r["t"] if r["n"] else None
        shim = _Newest(newest)
        since, until = (QuerySurface._time_arg(shim, call, k) for k in ("since", "until"))   # type: ignore[arg-type]
        if call.get("last_minutes") is not None and newest is not None:
            since = newest - 60.0 * _num(call, "last_minutes")
        return since, until

    def _n(self, w: sql.Where) -> int:
        return int(self.counted(lambda rg: sql.count(self.table, w, rg))[0]["n"])

    def _count(self, call, w: sql.Where) -> dict:
        """The matching lines; across boxes (no box, or several) also per box, most first, in the same scan:
        on a fleet node "which box has the most X" is a count of X by box, and the 1.5B writes it as a plain
        count. run() then says the result is a top_k by box (what the answer shows and checks: a total, the
        box with the most and the next ones)."""
        boxes = call.get("box")
        if boxes and (not isinstance(boxes, list) or len(boxes) == 1):
            return {"count": self._n(w)}
        rows = self.counted(lambda rg: sql.top_group(self.table, w, "box", BOXES_SHOWN, rg))
        return {"count": int(rows[0]["total"]) if rows else 0, "by": "box",
                "top": [{"value": r["value"], "count": r["n"]} for r in rows]}

    def _matching_texts(self, w: sql.Where) -> tuple[list[dict], bool]:
        rows = self.q(sql.lines(self.table, w, "ASC", self.row_cap + 1))
        return rows[: self.row_cap], len(rows) > self.row_cap

    def _top_k(self, call, w: sql.Where) -> dict:
        by = call.get("by") or "template"
        k = min(max(_int(call, "k", 5), 1), TOP_K_MAX)
        if by in sql.GROUPS:
            rows = self.counted(lambda rg: sql.top_group(self.table, w, by, k, rg))
        elif by == "value":        # query.py's: the numbers when the lines hold no other value
            rows = (self.counted(lambda rg: sql.top_params(self.table, w, k, ranges=rg))
                    or self.counted(lambda rg: sql.top_params(self.table, w, k, ranges=rg, numbers=True)))
        elif by == "param":
            pos = _int(call, "param", 0)
            rows = self.counted(lambda rg: sql.top_params(self.table, w, k, pos=pos, ranges=rg))
        elif by == "ip":
            texts, truncated = self._matching_texts(w)
            seen = Counter(ip for r in texts for ip in set(IPV4.findall(r["text"])))
            top = sorted(seen.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
            return {"by": by, "count": len(texts), "lines_with_ip": sum(1 for r in texts if IPV4.search(r["text"])),
                    "top": [{"value": v, "lines": n} for v, n in top], "truncated": truncated}
        else:
            named = self.counted(lambda rg: sql.top_params(self.table, w, k, name=str(by).lower(), ranges=rg))
            if not named:
                return self._top_after(str(by), k, w)
            return {"by": by, "of_param": str(by).lower(), "count": self._n(w),
                    "top": [{"value": r["value"], "count": r["n"]} for r in named]}
        count = (int(rows[0]["total"]) if rows else 0) if by in sql.GROUPS else self._n(w)
        return {"by": by, "count": count, "top": [{"value": r["value"], "count": r["n"]} for r in rows]}

    def _top_after(self, word: str, k: int, w: sql.Where) -> dict:
        if not re.fullmatch(r"[\w][\w.'/-]{0,47}", word):
            raise QueryError(f"by={word!r}: one of {', '.join(FLEET_BY)}, or a word of the lines")
        rx = re.compile(rf"(?<![\w-]){re.escape(word)}(?![\w-])\s*[:=]?\s*([^\s,;:()\[\]]+)", re.IGNORECASE)
        texts, truncated = self._matching_texts(w)
        seen = Counter(m.group(1).rstrip(".") for r in texts if (m := rx.search(r["text"])))
        top = sorted(seen.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
        return {"by": word, "count": len(texts), "lines_with_word": sum(seen.values()),
                "top": [{"value": v, "count": n} for v, n in top], "truncated": truncated}

    def _stats(self, call, w: sql.Where) -> dict:
        of = str(call.get("of") or "").strip().lower()
        if of and "<" not in str(call.get("text") or ""):
            r = self.q(sql.stats_named(self.table, w, of))[0]
            if r["n"]:
                aj = "ARRAY JOIN arrayMap(x -> ifNull(x, nan), param_num) AS v, param_name AS pn"
                return {"of_param": of, "count": self._n(w), **self._figures(r, w, aj, (f"pn = {sql.lit(of)}",))}
        rx = _number_regex(call)
        if rx is not None:
            out = self._stats_by_regex(rx, w)
            if out.get("n") or call.get("of") or "<N>" in str(call.get("text")):
                return out
        pos = call.get("param")
        if pos is None:
            best = self.q(sql.best_pos(self.table, w))
            if not best:
                return {"count": self._n(w), "n": 0, "note": "no numbers in these lines"}
            pos = int(best[0]["pos"]) - 1
        pos = int(pos)
        r = self.q(sql.stats_pos(self.table, w, pos))[0]
        aj = f"ARRAY JOIN [ifNull(param_num[{pos + 1}], nan)] AS v"
        return {"param": pos, "count": self._n(w),
                **self._figures(r, w, aj, (f"length(param_num) > {pos}",))}

    def _figures(self, r: dict, w: sql.Where, array_join: str, conds: tuple[str, ...]) -> dict:
        out: dict[str, Any] = {"n": int(r["n"])}
        if r["n"]:
            out.update(min=r["min"], max=r["max"], avg=round(r["avg"], 4), sum=r["sum"])
            for key, order in (("min_line", "ASC"), ("max_line", "DESC")):
                line = self.q(sql.extreme_line(self.table, w, array_join, order, (*conds, "NOT isNaN(v)")))
                out[key] = _line(line[0])
        return out

    def _stats_by_regex(self, rx: list[list[re.Pattern]], w: sql.Where) -> dict:
        texts, truncated = self._matching_texts(w)
        out, lo, hi = numbers_stats(texts, lambda r: r["text"], rx, truncated)
        for name, r in (("min_line", lo), ("max_line", hi)):
            if r is not None:
                out[name] = _line(r)
        return out

    def _first_last(self, call, w: sql.Where) -> dict:
        """One scan for the count and both times, then the lines at those two times (sorting every match is
        slower): the first at the first time and the last at the last, by box and id."""
        r = self.counted(lambda rg: sql.span(self.table, w, rg))[0]
        if not int(r["n"]):
            return {"count": 0}
        at = self.q(sql.lines_at(self.table, w, (r["lo"], r["hi"]), LINES_AT))
        firsts = [x for x in at if x["time"] == r["lo"]]
        lasts = [x for x in at if x["time"] == r["hi"]]
        if len(at) < LINES_AT and firsts and lasts:
            ends = [min(firsts, key=lambda x: (x["box"], x["id"])), max(lasts, key=lambda x: (x["box"], x["id"]))]
        else:                  # many lines at one time, or a time not read back exact: one end at a time
            ends = [(self.q(sql.line_at(self.table, w, t, order)) or self.q(sql.lines(self.table, w, order, 1)))[0]
                    for t, order in ((r["lo"], "ASC"), (r["hi"], "DESC"))]
        return {"count": int(r["n"]), "first": _line(ends[0]), "last": _line(ends[1])}

    def _buckets(self, call, w: sql.Where) -> dict:
        r = self.counted(lambda rg: sql.span(self.table, w, rg))[0]
        lo, hi, n = r["lo"], r["hi"], int(r["n"])
        if not n:
            return {"count": 0, "buckets": []}
        size = _num(call, "bucket_s", 0) or _nice_bucket((hi - lo) / 12)
        size = max(size, (hi - lo) / MAX_BUCKETS, 1.0)
        rows = self.counted(lambda rg: sql.buckets(self.table, w, lo, size, rg))
        return {"count": n, "bucket_s": size, "buckets": [{"start": lo + r["b"] * size, "count": r["n"]} for r in rows]}

    def _lines(self, call, w: sql.Where) -> dict:
        limit = min(max(_int(call, "limit", 10), 1), MAX_LINES)
        rows = self.q(sql.lines(self.table, w, "DESC", limit))
        total = self._n(w)
        return {"count": total, "lines": [_line(r) for r in rows], "truncated": total > len(rows)}


def _line(r: dict) -> dict:
    d = {"box": r["box"], "id": r["id"], "time": r["time"], "time_text": r.get("time_text"),
         "text": str(r["text"])[:LINE_CHARS]}
    d.update({k: v for k, v in (("host", r.get("host_")), ("component", r.get("component")),
                                ("level", r.get("level_"))) if v})
    return d


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) or bool(re.fullmatch(r"[-+]?\d+(\.\d+)?", str(v).strip()))

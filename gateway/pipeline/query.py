"""The read-only query surface over the store's structured fields: what the model calls to get figures.

A call is a small dict (JSON-able); run(call) returns a small dict holding the call itself and its
result. Operations:

  count       how many lines match                                -> {"count"}
  top_k       the most frequent values of a field among them      -> {"top": [{"value", "count"}], "distinct"}
              by: host | component | level | template | ip (IPv4 addresses in the lines) | value (the
              non-numeric template parameters; the numeric ones when there are none) | param (with "param": position, 0-based) | the
              name of a template parameter (fields.param_names): its values; day | hour (the line's own
              date, "2026-12-01", or hour, "2026-12-01 08:00-09:00", in UTC as the store keeps times);
              any other word: the value written after it in the lines ("operator" -> "O-117"); "k" values
  stats       min / max / avg / sum of a number in the lines      -> {"n", "min", "max", "avg", "sum", "min_line", "max_line"}
              the number is: the "<N>" of a text pattern; else the first number after the word "of"
              ("temperature" in "temperature: 81.5 C"), or right before it ("2.12 Nm"); without "of", the
              same for the text's last word; else template parameter "param" (position); else the
              position with the most distinct numbers
  first_last  the first and the last matching line (line's own time) -> {"count", "first", "last"}
  buckets     matching lines per time bucket                        -> {"bucket_s", "buckets": [{"start", "count"}]}
  lines       the newest matching lines (at most "limit", <= MAX_LINES) -> {"lines": [...]}

Filters (all optional, ANDed; built in query_filters.py): "text" (words that must occur: FTS5 for ASCII
text, a number and an id joined by "_" as tokens of their own; a substring match
(LIKE) when the text holds non-ASCII characters such as Chinese, which the default FTS5 tokenizer does
not split; a pattern when it holds placeholders such as <*>, <N> or <X>: its literal pieces, in order,
with anything between), "host" (the line's header host, else the transport's), "component", "level" (the header's
level word, else the severity's name; one, or a list of them), "template" (template id), "where" ({a template
parameter's name: its value}: lines whose parameter of that name has that value), "since"/"until" (Unix seconds, or a time as
written in a log or a question: "Jun 30 22:16:32", "2026-12-01 08:05", "08:05" (the newest line's day);
a year-less time takes the newest line's year; "until" a time without fractions includes that whole
second), "last_minutes" (the window ending at the newest line's own time). 
No match is an explicit result: {"count": 0, "no_match": true, ...}. Bad calls -> {"error": ...}.
When several words match nothing together, the words that match nothing alone are dropped, else
trailing words, until some line matches; the result then names the words used ("text_relaxed_to").

Limits: a separate connection opened read-only (`mode=ro`, `PRAGMA query_only`), an SQLite authorizer
that allows only SELECT and reads of this store's tables (no INSERT/UPDATE/DELETE, ATTACH, PRAGMA,
other tables or dangerous functions), at most `row_cap` rows read back from any statement (results
say `truncated`), and a time cap enforced by a progress handler (the statement is interrupted and
the result says so). Knows nothing about the model.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from pathlib import Path
from collections import Counter
from typing import Any

from gateway.pipeline.query_filters import (_HOST, _LEVEL, _TIME, MAX_TEXT_CHARS, CallFilters, QueryError,  # noqa: F401
                                            _int, _num, _param_conditions)   # the names other modules import here
from gateway.pipeline.query_text import PLACEHOLDER, _add_captures, _number_regex, _regexp, numbers_stats
from gateway.pipeline.query_counts import counted_call, from_counts
from gateway.pipeline.store_counts import StoreCounts

OPS = ("count", "top_k", "stats", "first_last", "buckets", "lines")
BY_FIELDS = ("host", "component", "level", "template", "ip", "value", "param", "day", "hour")
ROW_CAP = 10_000              # rows read back from one statement
TIME_CAP_S = 2.0              # one call's wall time
COUNTS_FRESH_S = 1.0          # the running counts (store_counts.py) are brought up to date at most this often
PROGRESS_STEPS = 1_000        # VM instructions between time checks
TOP_K_MAX = 20
MAX_LINES = 50
MAX_BUCKETS = 48
LINE_CHARS = 300              # a line's text in a result is clipped to this
TABLES = frozenset({"logs", "params", "templates", "logs_fts", "logs_fts_data", "logs_fts_idx",
                    "logs_fts_docsize", "logs_fts_config", "logs_fts_content", "sqlite_master",
                    "sqlite_schema"})
_DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})
IPV4 = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])")


class QueryInterrupted(RuntimeError):
    pass


def _authorizer(action: int, a1: str | None, a2: str | None, db: str | None, trigger: str | None) -> int:
    if action == sqlite3.SQLITE_SELECT:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_READ:
        return sqlite3.SQLITE_OK if (a1 or "").lower() in TABLES and db in ("main", None) else sqlite3.SQLITE_DENY
    # FTS5 opening logs_fts: its xConnect is checked as an UPDATE of sqlite_master and it reads
    # PRAGMA data_version; both harmless on a read-only, query_only connection.
    if action == sqlite3.SQLITE_UPDATE and a1 == "sqlite_master" and db == "main":
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and (a1 or "").lower() == "data_version" and a2 is None:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_FUNCTION:
        return sqlite3.SQLITE_DENY if (a2 or "").lower() in _DENIED_FUNCTIONS else sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY   # INSERT, UPDATE, DELETE, ATTACH, PRAGMA, CREATE, DROP, TRANSACTION, ...


class QuerySurface(CallFilters):
    """run(call) -> dict over the store at `path`, read-only. One connection per calling thread."""

    def __init__(self, path: str | Path, row_cap: int = ROW_CAP, time_cap_s: float = TIME_CAP_S,
                 progress_steps: int = PROGRESS_STEPS) -> None:
        self.path = Path(path)
        self.progress_steps = int(progress_steps)
        self.row_cap = int(row_cap)
        self.time_cap_s = float(time_cap_s)
        self._local = threading.local()
        self._counts: StoreCounts | None = None
        self._counts_lock = threading.Lock()
        self._counted = -COUNTS_FRESH_S

    # --- the connection -----------------------------------------------------------------------
    def connect(self) -> sqlite3.Connection:
        """This thread's read-only connection (authorizer and progress handler installed). It is
        closed when the thread ends: the thread-local holder's finalizer closes it (issue 30: server
        threads come and go, and each used to leave its connection open)."""
        import weakref

        holder = getattr(self._local, "holder", None)
        if holder is None:
            db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, timeout=5,
                                 check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA query_only=ON")
            db.execute("PRAGMA busy_timeout=5000")
            db.create_function("regexp", 2, _regexp, deterministic=True)   # `text REGEXP ?`: whole-line patterns
            db.set_authorizer(_authorizer)
            db.set_progress_handler(self._progress, self.progress_steps)
            holder = self._local.holder = lambda: db      # dropped with the thread's locals
            weakref.finalize(holder, db.close)
        return holder()

    def _progress(self) -> int:
        return 1 if time.monotonic() > self._local.deadline else 0

    def execute(self, sql: str, args: tuple | list = ()) -> tuple[list[tuple], bool]:
        """(rows, truncated) of one statement under the caps; raises QueryInterrupted past the time cap,
        sqlite3.DatabaseError when the authorizer refuses it."""
        db = self.connect()
        if not getattr(self._local, "in_call", False):
            self._local.deadline = time.monotonic() + self.time_cap_s
        try:
            cur = db.execute(sql, args)
            rows = cur.fetchmany(self.row_cap + 1)
        except sqlite3.OperationalError as exc:
            if "interrupted" in str(exc):
                raise QueryInterrupted(f"the query ran past its time cap of {self.time_cap_s:g} s") from None
            raise
        return rows[: self.row_cap], len(rows) > self.row_cap

    def counts(self) -> StoreCounts:
        """The store's running counts by host, component, level and template, brought up to date (at most
        once a COUNTS_FRESH_S)."""
        with self._counts_lock:
            if self._counts is None:
                self._counts = StoreCounts(self, _FIELD_EXPRS)
            counts, due = self._counts, time.monotonic() - self._counted >= COUNTS_FRESH_S
            if due:
                self._counted = time.monotonic()
        if due:
            counts.refresh()
        return counts

    def _newest_time(self) -> float | None:
        """The newest line's own time: the running counts' newest and that of the lines stored since."""
        known = self.counts().newest()
        if known is None:
            return self.execute(f"SELECT max({_TIME}) FROM logs l")[0][0][0]
        since, _ = self.execute(f"SELECT max({_TIME}) FROM logs l WHERE l.id > ?", [known[1]])
        return max([known[0], *([since[0][0]] if since and since[0][0] is not None else [])])

    def close(self) -> None:
        """Closes this thread's connection now (other threads' close as those threads end)."""
        holder = getattr(self._local, "holder", None)
        if holder is not None:
            holder().close()
            self._local.holder = None

    # --- calls --------------------------------------------------------------------------------
    def run(self, call: dict[str, Any]) -> dict[str, Any]:
        """The call's result: {"call": call, ...}; {"error"} for a call that cannot run."""
        out: dict[str, Any] = {"call": dict(call)}
        self.connect()
        self._local.deadline = time.monotonic() + self.time_cap_s
        self._local.in_call = True
        try:
            op = call.get("op")
            if op not in OPS:
                raise QueryError(f"unknown op {op!r}; one of {', '.join(OPS)}")
            out.update(self._run_pattern(call, op))
            words = str(call.get("text") or "").split()
            if PLACEHOLDER.search(str(call.get("text") or "")):
                words = []                                    # a pattern is meant exactly
            if out.get("count") == 0 and len(words) > 1:
                # A word that matches no line on its own under the other filters ("capper" with host
                # line3/capper: the lines say "torque 2.02 Nm") fails every text holding it, so only the
                # other words are tried, dropping trailing ones ("failed password attempts": "Failed
                # password for ...").
                alive = [w for w in words if self._count(*self._with_text(call, w))["count"]]
                for n in range(min(len(alive), len(words) - 1), 0, -1):
                    relaxed, where, args = self._with_text(call, " ".join(alive[:n]))
                    found = getattr(self, "_" + op)(relaxed, where, args)
                    if found.get("count"):
                        out.update(found, text_relaxed_to=relaxed["text"])
                        break
            _add_captures(out, str(call.get("text") or ""))
        except (QueryError, QueryInterrupted, sqlite3.DatabaseError) as exc:
            out["error"] = str(exc)
        finally:
            self._local.in_call = False
        if out.get("count") == 0 and "error" not in out:
            out["no_match"] = True
        return out

    def _with_text(self, call: dict[str, Any], text: str) -> tuple[dict[str, Any], str, list]:
        relaxed = {**call, "text": text}
        return (relaxed, *self._filters(relaxed))

    def _run_pattern(self, call: dict[str, Any], op: str) -> dict[str, Any]:
        """The op's result; a text pattern ("lines of the form ...") is first matched as the end of the
        line (its form, not a line that merely holds its pieces: BGL has several lines with "Machine
        State Register: ..." inside), then anywhere when no line ends so. A count or top_k by a field
        filtered by fields and time alone comes from the running counts (query_counts.py)."""
        if counted_call(call):
            k = min(max(_int(call, "k", 5), 1), TOP_K_MAX)
            out = from_counts(self, call, *self._window(call), k)
            if out is not None:
                return out
        if PLACEHOLDER.search(str(call.get("text") or "")):
            where, args = self._filters(call, anchored=True)
            out = getattr(self, "_" + op)(call, where, args)
            if out.get("count"):
                return out
        where, args = self._filters(call)
        return getattr(self, "_" + op)(call, where, args)

    def _matching_texts(self, where: str, args: list) -> tuple[list[tuple], bool]:
        """(id, time, time_text, text) of the matching lines, oldest first, at most row_cap."""
        return self.execute(f"SELECT l.id, {_TIME}, l.time_text, l.text FROM logs l{where} ORDER BY {_TIME}, l.id",
                            args)

    def _count(self, call, where, args) -> dict:
        rows, _ = self.execute(f"SELECT count(*) FROM logs l{where}", args)
        return {"count": rows[0][0]}

    def _top_k(self, call, where, args) -> dict:
        by = call.get("by") or "template"
        k = min(max(_int(call, "k", 5), 1), TOP_K_MAX)
        if by not in BY_FIELDS:
            named = self._top_named(str(by).lower(), k, where, args)
            return named if named is not None else self._top_after(str(by), k, where, args)
        if by == "ip":
            rows, truncated = self._matching_texts(where, args)
            seen = Counter(ip for r in rows for ip in set(IPV4.findall(r[3])))
            top = sorted(seen.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
            return {"by": by, "count": len(rows), "lines_with_ip": sum(1 for r in rows if IPV4.search(r[3])),
                    "top": [{"value": v, "lines": n} for v, n in top], "truncated": truncated}
        if by == "value":
            # names and ids; the numbers when the lines hold nothing else ("which state code is most common")
            for cond in (" AND p.num IS NULL", ""):
                rows, _ = self.execute(f"SELECT p.text, count(*) FROM logs l JOIN params p ON p.line_id = l.id{cond}"
                                       f"{where} GROUP BY p.text ORDER BY count(*) DESC, p.text LIMIT ?", [*args, k])
                if rows:
                    break
            return {"by": by, "count": self._count(call, where, args)["count"],
                    "top": [{"value": v, "count": n} for v, n in rows]}
        if by == "param":
            pos = _int(call, "param", 0)
            sql = (f"SELECT p.text, count(*) FROM logs l JOIN params p ON p.line_id = l.id AND p.pos = {pos}"
                   f"{where} GROUP BY p.text ORDER BY count(*) DESC, p.text LIMIT ?")
        else:       # one group per line: the lines matched are the groups' sum, from the same scan
            if by == "template":
                sql = (f"SELECT coalesce(t.template, 'template ' || l.template_id), count(*), sum(count(*)) OVER () "
                       f"FROM logs l LEFT JOIN templates t ON t.id = l.template_id{where} GROUP BY l.template_id "
                       "ORDER BY count(*) DESC LIMIT ?")
            else:
                expr = {"host": _HOST, "component": "l.component", "level": _LEVEL, **_CALENDAR}[by]
                sql = (f"SELECT {expr} AS v, count(*), sum(count(*)) OVER () FROM logs l{where} GROUP BY v "
                       "ORDER BY count(*) DESC, v LIMIT ?")
            rows, _ = self.execute(sql, [*args, k])
            return {"by": by, "count": rows[0][2] if rows else 0, "top": [{"value": v, "count": n} for v, n, _ in rows]}
        rows, _ = self.execute(sql, [*args, k])
        total = self._count(call, where, args)["count"]
        return {"by": by, "count": total, "top": [{"value": v, "count": n} for v, n in rows]}

    def _top_named(self, name: str, k: int, where: str, args: list) -> dict | None:
        """top_k by the values of the template parameter called `name` (fields.param_names) in the
        matching lines; None when none of them has one."""
        rows, _ = self.execute(f"SELECT p.text, count(*) FROM logs l JOIN params p ON p.line_id = l.id AND p.name = ?"
                               f"{where} GROUP BY p.text ORDER BY count(*) DESC, p.text LIMIT ?", [name, *args, k])
        if not rows:
            return None
        return {"by": name, "of_param": name, "count": self._count({}, where, args)["count"],
                "top": [{"value": v, "count": n} for v, n in rows]}

    def param_tops(self, call: dict[str, Any], k: int = 2) -> dict[str, dict[str, Any]]:
        """Over the lines the call's filters match, each named template parameter: its distinct values,
        the lines that have it, whether every value is a number, and its k most frequent values with
        their counts ({name: {"values", "lines", "numeric", "top": [{"value", "count"}]}})."""
        where, args = self._filters(call)
        rows, _ = self.execute(
            "SELECT name, text, n, d, tot, numeric FROM (SELECT p.name AS name, p.text AS text, count(*) AS n, "
            "count(*) OVER w AS d, sum(count(*)) OVER w AS tot, min(min(p.num IS NOT NULL)) OVER w AS numeric, "
            "row_number() OVER (PARTITION BY p.name ORDER BY count(*) DESC, p.text) AS r "
            f"FROM logs l JOIN params p ON p.line_id = l.id AND p.name IS NOT NULL{where} GROUP BY p.name, p.text "
            "WINDOW w AS (PARTITION BY p.name)) WHERE r <= ? ORDER BY tot DESC, name, n DESC", [*args, k])
        out: dict[str, dict[str, Any]] = {}
        for name, text, n, d, tot, numeric in rows:
            got = out.setdefault(name, {"values": d, "lines": tot, "numeric": bool(numeric), "top": []})
            got["top"].append({"value": text, "count": n})
        return out

    def _top_after(self, word: str, k: int, where: str, args: list) -> dict:
        """top_k by the value written after `word` in the matching lines ("operator O-117 cleared")."""
        if not re.fullmatch(r"[\w][\w.'/-]{0,47}", word):
            raise QueryError(f"by={word!r}: one of {', '.join(BY_FIELDS)}, or a word of the lines")
        rx = re.compile(rf"(?<![\w-]){re.escape(word)}(?![\w-])\s*[:=]?\s*([^\s,;:()\[\]]+)", re.IGNORECASE)
        rows, truncated = self._matching_texts(where, args)
        seen = Counter(m.group(1).rstrip(".") for r in rows if (m := rx.search(r[3])))
        top = sorted(seen.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
        return {"by": word, "count": len(rows), "lines_with_word": sum(seen.values()),
                "top": [{"value": v, "count": n} for v, n in top], "truncated": truncated}

    def _stats(self, call, where, args) -> dict:
        of = str(call.get("of") or "").strip().lower()
        if of and "<" not in str(call.get("text") or ""):      # a named parameter first (fields.param_names)
            named = self._stats_named(call, of, where, args)
            if named is not None:
                return named
        rx = _number_regex(call)
        if rx is not None:
            out = self._stats_by_regex(rx, where, args)
            if out.get("n") or call.get("of") or "<N>" in str(call.get("text")):
                return out                     # else: the text's last word is followed by no number
        pos = call.get("param")
        if pos is None:
            best, _ = self.execute(f"SELECT p.pos FROM logs l JOIN params p ON p.line_id = l.id{where}"
                                   f"{' AND' if where else ' WHERE'} p.num IS NOT NULL GROUP BY p.pos"
                                   " ORDER BY count(DISTINCT p.num) DESC, p.pos DESC LIMIT 1", args)
            if not best:
                return {"count": self._count(call, where, args)["count"], "n": 0, "note": "no numbers in these lines"}
            pos = best[0][0]
        pos = int(pos)
        join = f" FROM logs l JOIN params p ON p.line_id = l.id AND p.pos = {pos}{where}"
        cond = f"{' AND' if where else ' WHERE'} p.num IS NOT NULL"
        rows, _ = self.execute(f"SELECT count(*), min(p.num), max(p.num), avg(p.num), sum(p.num){join}{cond}", args)
        n, lo, hi, avg, total = rows[0]
        out: dict[str, Any] = {"param": pos, "n": n, "count": self._count(call, where, args)["count"]}
        if n:
            out.update(min=lo, max=hi, avg=round(avg, 4), sum=total)
            for name, order in (("min_line", "ASC"), ("max_line", "DESC")):
                r, _ = self.execute(f"SELECT l.id, {_TIME}, l.time_text, l.text{join}{cond} ORDER BY p.num {order}, "
                                    "l.id LIMIT 1", args)
                out[name] = _line(r[0][:2] + (None, None, None, r[0][2], r[0][3]))
        return out

    def _stats_named(self, call, name: str, where: str, args: list) -> dict | None:
        """min/max/avg/sum of the numeric parameter called `name` in the matching lines; None when
        none of them has one."""
        join = f" FROM logs l JOIN params p ON p.line_id = l.id AND p.name = ? AND p.num IS NOT NULL{where}"
        rows, _ = self.execute(f"SELECT count(*), min(p.num), max(p.num), avg(p.num), sum(p.num){join}", [name, *args])
        n, lo, hi, avg, total = rows[0]
        if not n:
            return None
        out: dict[str, Any] = {"of_param": name, "n": n, "count": self._count(call, where, args)["count"],
                               "min": lo, "max": hi, "avg": round(avg, 4), "sum": total}
        for key, order in (("min_line", "ASC"), ("max_line", "DESC")):
            r, _ = self.execute(f"SELECT l.id, {_TIME}, l.time_text, l.text{join} ORDER BY p.num {order}, l.id LIMIT 1",
                                [name, *args])
            out[key] = _line(r[0][:2] + (None, None, None, r[0][2], r[0][3]))
        return out

    def _stats_by_regex(self, rx: list[list[re.Pattern]], where: str, args: list) -> dict:
        """min/max/avg of the number `rx` (tiers of regexes: numbers_stats) captures in each matching line."""
        rows, truncated = self._matching_texts(where, args)
        out, lo, hi = numbers_stats(rows, lambda r: r[3], rx, truncated)
        for name, r in (("min_line", lo), ("max_line", hi)):
            if r is not None:
                out[name] = _line((r[0], r[1], None, None, None, r[2], r[3]))
        return out

    def _first_last(self, call, where, args) -> dict:
        cols = f"SELECT l.id, {_TIME}, {_HOST}, l.component, {_LEVEL}, l.time_text, l.text FROM logs l{where}"
        first, _ = self.execute(cols + f" ORDER BY {_TIME} ASC, l.id ASC LIMIT 1", args)
        if not first:
            return {"count": 0}
        last, _ = self.execute(cols + f" ORDER BY {_TIME} DESC, l.id DESC LIMIT 1", args)
        return {"count": self._count(call, where, args)["count"], "first": _line(first[0]), "last": _line(last[0])}

    def _buckets(self, call, where, args) -> dict:
        rows, _ = self.execute(f"SELECT min({_TIME}), max({_TIME}), count(*) FROM logs l{where}", args)
        lo, hi, n = rows[0]
        if not n:
            return {"count": 0, "buckets": []}
        size = _num(call, "bucket_s", 0) or _nice_bucket((hi - lo) / 12)
        size = max(size, (hi - lo) / MAX_BUCKETS, 1.0)
        rows, _ = self.execute(f"SELECT CAST(({_TIME} - ?) / ? AS INTEGER) AS b, count(*) FROM logs l{where}"
                               " GROUP BY b ORDER BY b", [lo, size, *args])
        return {"count": n, "bucket_s": size, "buckets": [{"start": lo + b * size, "count": c} for b, c in rows]}

    def _lines(self, call, where, args) -> dict:
        limit = min(max(_int(call, "limit", 10), 1), MAX_LINES)
        rows, _ = self.execute(f"SELECT l.id, {_TIME}, {_HOST}, l.component, {_LEVEL}, l.time_text, l.text FROM logs l"
                               f"{where} ORDER BY {_TIME} DESC, l.id DESC LIMIT ?", [*args, limit])
        total = self._count(call, where, args)["count"]
        return {"count": total, "lines": [_line(r) for r in rows], "truncated": total > len(rows)}


def _line(r: tuple) -> dict:
    lid, t, host, comp, level, time_text, text = r
    d = {"id": lid, "time": t, "time_text": time_text, "text": text[:LINE_CHARS]}
    d.update({k: v for k, v in (("host", host), ("component", comp), ("level", level)) if v})
    return d


def _nice_bucket(seconds: float) -> float:
    for s in (1, 5, 10, 30, 60, 300, 600, 1800, 3600, 3 * 3600, 6 * 3600, 86400, 7 * 86400):
        if seconds <= s:
            return float(s)
    return 30 * 86400.0


_FIELD_EXPRS = {"host": _HOST, "component": "l.component", "level": _LEVEL}
# A line's day and hour as the calendar names them ("which day had the most errors": buckets start at the
# first line's time, not at midnight); the fleet node's sql.GROUPS writes the same texts.
_CALENDAR = {"day": f"strftime('%Y-%m-%d', {_TIME}, 'unixepoch')",
             "hour": f"strftime('%Y-%m-%d %H:00-', {_TIME}, 'unixepoch') || strftime('%H:00', {_TIME} + 3600, 'unixepoch')"}

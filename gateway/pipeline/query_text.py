"""Text patterns of the query surface (gateway.pipeline.query): a text filter with placeholders (<*>,
<N>, <X>) as a regex for the end of a line, its named placeholders as captures, and the regexes that
find the number a stats call asks for. Pure functions over strings; knows nothing about the store.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Callable

PLACEHOLDER = re.compile(r"<[A-Za-z*]{1,8}>")      # <*>, <N>, <X>: "any text here" in a text pattern
NUMBER = r"(?<![\d.])([-+]?\d+(?:\.\d+)?)(?![\d]|\.\d)"      # not a piece of an address or version
DOTTED_NUMBER = re.compile(r"\d+(?:\.\d+)*")   # a number, a version or an address: one token of a text filter


def outside_dotted(word: str) -> str:
    """A regex for a number as a token of its own: not in "123.235.32.19" nor in an id ("blk_123"); a
    sentence's full stop after it is no dotted name. A number of one or two digits is not a part of a
    clock time or a date either ("14" of 18:04:14, "18" of 2015-10-18: the line's time, not its words)."""
    if CLOCK_PART.fullmatch(word):
        return r"(?<![\w.])(?<!\d[:\-])" + re.escape(word) + r"(?![\w]|\.\w|[:\-]\d)"
    return r"(?<![\w.])" + re.escape(word) + r"(?![\w]|\.\w)"


CLOCK_PART = re.compile(r"\d{1,2}")     # a number that may be a clock's or a date's part


def _line_end_regex(pattern: str) -> str:
    """A text pattern as a regex for the end of a line: words with any spacing, <*>/<N>/<X> any text
    (a trailing one: one whitespace-free value)."""
    parts = [p for p in re.split(r"(<[A-Za-z*]{1,8}>)", pattern) if p.strip()]
    rx = ""
    for i, p in enumerate(parts):
        if PLACEHOLDER.fullmatch(p):
            rx += r"\s*\S+" if i == len(parts) - 1 else r".*?"
        else:
            rx += (r"\s*" if p[0].isspace() else "") + r"\s+".join(map(re.escape, p.split())) + \
                  (r"\s*" if p[-1].isspace() else "")
    return rx + r"\s*$"


@functools.lru_cache(maxsize=64)
def _compiled(rx: str) -> re.Pattern:
    return re.compile(rx)


def _regexp(rx: str, text: str | None) -> bool:
    return text is not None and _compiled(rx).search(text) is not None


def _capture_regex(pattern: str) -> re.Pattern | None:
    """A regex whose named groups are a text pattern's named placeholders (<X>, <N>: "what is X in that
    line"), each one whitespace-free value; None when the pattern names none."""
    parts = re.split(r"(<[A-Za-z*]{1,8}>)", pattern)
    if not any(PLACEHOLDER.fullmatch(p) and p != "<*>" for p in parts):
        return None
    rx, names = "", set()
    for i, p in enumerate(parts):
        if PLACEHOLDER.fullmatch(p):
            name = p[1:-1]
            glued = i + 1 < len(parts) and parts[i + 1][:1] not in ("", " ")
            value = r"\S+?" if glued else r"\S+"
            if name == "*" or name in names:
                rx += value
            else:
                names.add(name)
                rx += f"(?P<{name}>{value})"
        elif p.strip():
            rx += (r"\s*" if p[0].isspace() else "") + r"\s+".join(map(re.escape, p.split())) + (r"\s*" if p[-1].isspace() else "")
    return re.compile(rx)


def _add_captures(out: dict[str, Any], pattern: str) -> None:
    """Each result line of a pattern's call gets `captured`: its named placeholders' values."""
    rx = _capture_regex(pattern) if PLACEHOLDER.search(pattern) else None
    if rx is None:
        return
    for line in [*out.get("lines", []), *(out[k] for k in ("first", "last", "min_line", "max_line") if k in out)]:
        text = str(line.get("text", "")) if isinstance(line, dict) else ""
        if text and (m := _compiled(rx.pattern + r"\s*$").search(text) or rx.search(text)):
            line["captured"] = {k: v for k, v in m.groupdict().items() if v is not None}


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _number_regex(call: dict[str, Any]) -> list[list[re.Pattern]] | None:
    """The number a stats call asks for, as tiers of regexes over a line (group 1 the number; numbers_stats
    reads the first tier that finds one in any line): the <N> of a text pattern; or the number after the
    word "of" or right before it (a unit), the nearer, and, when no line has one that near, the first number
    after the word anywhere in the line ("stored as bytes in memory (estimated size 263.0 B": 263.0); without
    "of" nor "param", the near ones for the text's last word. None: by template parameter."""
    text = str(call.get("text") or "")
    if "<N>" in text or "<n>" in text:
        parts = re.split(r"(<[A-Za-z*]{1,8}>)", text)
        rx = ""
        for p in parts:
            if p.lower() == "<n>":
                rx += NUMBER if NUMBER not in rx else r".*?"
            elif PLACEHOLDER.fullmatch(p):
                rx += r".*?"
            elif p.strip():
                rx += ((r"\s*" if p[0].isspace() else "") + r"\s+".join(re.escape(w) for w in p.split())
                       + (r"\s*" if p[-1].isspace() else ""))
            else:
                rx += r"\s*"
        return [[re.compile(rx, re.IGNORECASE)]]
    of = str(call.get("of") or "").strip()
    named = bool(of)
    if not of and call.get("param") is None and text.split():
        of = text.split()[-1]                 # "heater temperature": the number after "temperature"
    if not of:
        return None
    w = re.escape(of)
    near = [re.compile(rf"(?<![\w]){w}(?![\w])[^\d\n+-]{{0,24}}?{NUMBER}", re.IGNORECASE),   # "torque 2.12"
            re.compile(rf"{NUMBER}\s*{w}(?![\w])", re.IGNORECASE)]                            # "2.12 Nm"
    # (numbers_stats takes the nearer of the two in a line: "2.12 Nm, caps applied 24" -> 2.12)
    return [near, [re.compile(rf"(?<![\w]){w}(?![\w])[^\d\n]*?{NUMBER}", re.IGNORECASE)]] if named else [near]


def numbers_stats(rows: list, text_of: Callable[[Any], str], tiers: list[list[re.Pattern]],
                  truncated: bool) -> tuple[dict[str, Any], Any, Any]:
    """A stats result over `rows` (any row type; text_of gives its line's text) of the number the first
    tier of regexes (_number_regex) to read one in any row captures in each: of a tier's regexes, the
    nearer match, "after" on a tie. -> (result without its min_line/max_line, the row of the minimum, of
    the maximum; None, None when no row holds such a number). Shared by the box's store surface and the
    fleet node's."""
    vals: list = []
    for rx in tiers:
        for r in rows:
            found = [m for x in rx if (m := x.search(text_of(r)))]
            if found:
                m = min(found, key=lambda m: (m.end() - m.start() - len(m.group(1)), found.index(m)))
                vals.append((float(m.group(1)), r))
        if vals:
            break
    out: dict[str, Any] = {"count": len(rows), "n": len(vals), "truncated": truncated}
    if not vals:
        out["note"] = "no such number in these lines"
        return out, None, None
    lo = min(vals, key=lambda v: v[0])
    hi = max(vals, key=lambda v: v[0])
    total = sum(v for v, _ in vals)
    out.update(min=lo[0], max=hi[0], avg=round(total / len(vals), 4), sum=total)
    return out, lo[1], hi[1]

"""Structured fields of one stored line: header fields (from gateway.ingest.header), the Drain
template id and the template's parameters (the values under its wildcards).

Parameters: the message is split on whitespace exactly as Drain splits it (masking never adds or
removes whitespace, so a message and its template have the same number of tokens). A template
token "<*>" yields the whole message token; a token with masks inside ("rhost=<IP>",
"<NUM>C") yields the parts under the masks. Positions count the parameters of the line, 0-based.

Numeric value of a parameter (number_of): the text, without surrounding brackets, quotes and
trailing punctuation, must be a decimal number (sign, digits, optional fraction and exponent)
optionally followed by a unit of at most 4 letters or "%"/"°"; "81.5" -> 81.5, "92.4C" -> 92.4,
"-3" -> -3.0, "250ms" -> 250.0, "50%" -> 50.0. Not numbers: IPs, versions ("1.2.3"), hex, ids
with letters before the digits ("blk_42"), times ("12:00").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

MAX_PARAMS = 32                  # parameters kept per line
MAX_PARAM_CHARS = 256

_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?(?:[A-Za-z]{1,4}|%|°[CF]?|°)?")
_NUM_PART = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_MASK = re.compile(r"<[A-Z*]+>|<\*>")


@dataclass(slots=True)
class LineFields:
    """What a line is queried by, beside its text. `time` is the line's own time (header) or
    None; `params` is [(text, number or None)]."""

    time: float | None = None
    time_text: str | None = None
    host: str | None = None
    component: str | None = None
    pid: int | None = None
    level: str | None = None
    template: str | None = None
    params: list[tuple[str, float | None]] = field(default_factory=list)


def number_of(text: str) -> float | None:
    t = text.strip("()[]{}\"'<>").rstrip(",;.:!")
    if not t or len(t) > 40 or not _NUMBER.fullmatch(t):
        return None
    m = _NUM_PART.match(t)
    try:
        v = float(m.group(0)) if m else None
    except ValueError:
        return None
    if v is None or v != v or v in (float("inf"), float("-inf")):
        return None
    return v


@lru_cache(maxsize=4096)
def _token_regex(tok: str) -> re.Pattern | None:
    """A template token with masks inside -> a regex whose groups are the masked parts."""
    parts = _MASK.split(tok)
    if len(parts) == 1:
        return None
    return re.compile("(.+?)".join(re.escape(p) for p in parts) + r"\Z", re.S)


def extract_params(template: str, message: str) -> list[tuple[str, float | None]]:
    """Parameters of `message` under `template` (see the module doc); [] when they do not align."""
    ttoks = template.split()
    mtoks = message.split()
    if len(ttoks) != len(mtoks):
        return []
    out: list[tuple[str, float | None]] = []
    for t, m in zip(ttoks, mtoks):
        if t == m:
            continue
        if t == "<*>":
            vals = [m]
        else:
            rx = _token_regex(t)
            if rx is None:
                continue
            mm = rx.match(m)
            vals = list(mm.groups()) if mm else [m]
        for v in vals:
            v = v[:MAX_PARAM_CHARS]
            out.append((v, number_of(v)))
            if len(out) >= MAX_PARAMS:
                return out
    return out

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
from collections.abc import Sequence
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
    params: list[tuple] = field(default_factory=list)   # (text, number or None[, name])


@lru_cache(maxsize=8192)
def number_of(text: str) -> float | None:
    """(Cached: the values of a source repeat, and this runs for every parameter of every line.)"""
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


_WRAP = "()[]{}\"',;:."                     # what may wrap an identifier in a line ("[container_01_05]")
_GLUE = re.compile(r"[A-Za-z0-9_-]*")


@lru_cache(maxsize=4096)
def one_value(tok: str) -> tuple[str, str, str] | None:
    """(lead, core, trail) of a template token whose masks are one identifier with the letters around
    them: only letters, digits, "_" and "-" between and beside the masks, a letter or "_" right before a
    mask or "_" right after one ("container_<NUM>_<NUM>_<NUM>", "[attempt_<NUM>_<NUM>_m_<NUM>]",
    "rdd_<NUM>_<NUM>", "v<NUM>"). Its value is the whole core: the digits of an id are not values of their
    own. None for any other token ("rhost=<IP>", "<NUM>/<NUM>", "<NUM>-<NUM>", "<NUM>ms", a bare mask)."""
    lead = len(tok) - len(tok.lstrip(_WRAP))
    end = len(tok.rstrip(_WRAP))
    core = tok[lead:end]
    parts = _MASK.split(core)
    # a letter or "_" right before a mask, or "_" right after one: an id ("<NUM>ms" is a number and its unit)
    glued = any(p[-1:].isalpha() or p[-1:] == "_" for p in parts[:-1]) or any(p[:1] == "_" for p in parts[1:])
    if len(parts) == 1 or not glued or not all(_GLUE.fullmatch(p) for p in parts):
        return None
    return tok[:lead], core, tok[end:]


@lru_cache(maxsize=4096)
def _token_regex(tok: str) -> re.Pattern | None:
    """A template token with masks inside -> a regex whose groups are its values: the masked parts, or
    the whole identifier of a one_value token."""
    whole = one_value(tok)
    if whole is not None:
        return re.compile(re.escape(whole[0]) + "(.+?)" + re.escape(whole[2]) + r"\Z", re.S)
    parts = _MASK.split(tok)
    if len(parts) == 1:
        return None
    return re.compile("(.+?)".join(re.escape(p) for p in parts) + r"\Z", re.S)


def fill(tok: str, values: Sequence[str]) -> str:
    """A template token with its values in place of its masks (a one_value token's core replaced whole)."""
    if tok == "<*>":
        return values[0]
    whole = one_value(tok)
    if whole is not None:
        return whole[0] + values[0] + whole[2]
    parts = _MASK.split(tok)
    return parts[0] + "".join(v + p for v, p in zip(values, parts[1:]))


def named_template(template: str, names: Sequence[str]) -> str:
    """The template with each parameter written <name> (names in extract_params order; "*" past them)."""
    it = iter(names)
    out = []
    for tok in template.split():
        n = 1 if tok == "<*>" or one_value(tok) else len(_MASK.findall(tok))
        out.append(fill(tok, [f"<{next(it, '*')}>" for _ in range(n)]) if n else tok)
    return " ".join(out)


@lru_cache(maxsize=4096)
def _plan(template: str) -> tuple[int, tuple[tuple[int, str, re.Pattern | None], ...]]:
    """The template's token count and its variable tokens: (index, token, its regex; None for "<*>")."""
    toks = template.split()
    return len(toks), tuple((i, t, None if t == "<*>" else _token_regex(t)) for i, t in enumerate(toks)
                            if t == "<*>" or ("<" in t and _token_regex(t) is not None))


def extract_params(template: str, message: str) -> list[tuple[str, float | None]]:
    """Parameters of `message` under `template` (see the module doc); [] when they do not align."""
    return _values(_plan(template), message.split())


def _values(plan: tuple, mtoks: list[str]) -> list[tuple[str, float | None]]:
    n, variables = plan
    if n != len(mtoks):
        return []
    out: list[tuple[str, float | None]] = []
    for i, t, rx in variables:
        m = mtoks[i]
        if t == m:
            continue
        if rx is None:
            vals: Sequence[str] = (m,)
        else:
            mm = rx.match(m)
            vals = mm.groups() if mm else (m,)
        for v in vals:
            v = v[:MAX_PARAM_CHARS]
            out.append((v, number_of(v)))
            if len(out) >= MAX_PARAMS:
                return out
    return out


# --- parameter names and types -----------------------------------------------------------------
# A template's variables are named from the template's own words: "port <*>" -> port, "rhost=<*>" ->
# rhost, "of size <*>" -> size; after a preposition ("from <*>") the value's type names it
# (address). Types come from the value: number, size or duration (a number with its unit, in the
# token or the next one), address (IPv4[:port], host:port), path, id (letters and digits mixed,
# hex), word. Names are a function of the template text (stored in the templates table), so every
# reader derives the same names.

_PREPOSITIONS = frozenset("from to by at in on for of with via into onto as is was are were be the a an and or "
                          "than after before".split())
_SIZE_UNITS = frozenset("b kb mb gb tb kib mib gib bytes byte".split())
_DURATION_UNITS = frozenset("ns us µs ms s sec secs second seconds min mins minute minutes h hour hours".split())
UNITS = _SIZE_UNITS | _DURATION_UNITS | {"%", "°c", "°f"}     # what a number written before it measures
_ADDRESS = re.compile(r"/?\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+:\d+")
_UNIT_SUFFIX = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)\s*([A-Za-zµ%°]+)")
_NAME = re.compile(r"[A-Za-z\u4e00-\u9fff][\w\u4e00-\u9fff-]*")


@lru_cache(maxsize=8192)
def value_type(text: str, next_token: str, num: float | None) -> str:
    """(Cached, as number_of.) number | size | duration | address | path | id | word (see above); `num` is number_of(text)."""
    t = text.strip("()[]{}\"'<>,;")
    if _ADDRESS.fullmatch(t):
        return "address"
    if num is not None:
        m = _UNIT_SUFFIX.fullmatch(t)
        unit = (m.group(1) if m else next_token.strip(",;.()[]")).lower()
        if unit in _SIZE_UNITS:
            return "size"
        if unit in _DURATION_UNITS:
            return "duration"
        return "number"
    if t.startswith("/") or (len(t) > 2 and t[1:3] == ":\\"):
        return "path"
    if any(c.isdigit() for c in t):
        return "id"
    return "word"


def _name_before(tokens: list[str], i: int, head: str) -> str | None:
    """The word a parameter is named by: the key of "key=<*>"/"key:<*>" in its own token, else the
    constant word before it ("port <*>"), past "of", a copula or an article ("size of <*>", "state is
    <*>"); after any other preposition none ("root from <*>": the type names it, address)."""
    if head and not head.strip(":=/([{'\""):
        head = ""
    if head:
        w = head.strip(":=/([{'\"_-").lower()
        return w if _NAME.fullmatch(w or "-") else None
    for j in range(i - 1, max(-1, i - 3), -1):
        w = tokens[j].strip(":=,;()[]{}'\"").lower()
        if "<" in tokens[j] or not _NAME.fullmatch(w or "-"):
            return None
        if w not in _PREPOSITIONS:
            return w
        if w not in _WALK_PAST:
            return None
    return None


_WALK_PAST = frozenset("of is was are were be the a an".split())


@lru_cache(maxsize=4096)
def param_slots(template: str) -> tuple[tuple[str, int], ...]:
    """(the name's source word or "", token index) per parameter, in extract_params order."""
    toks = template.split()
    out: list[tuple[str, int]] = []
    for i, t in enumerate(toks):
        if "<" not in t:
            continue
        whole = one_value(t)
        heads = [""] if t == "<*>" else [_MASK.split(whole[1])[0]] if whole else _MASK.split(t)[:-1]
        for k, head in enumerate(heads):
            key = re.search(r"([A-Za-z_][\w.-]*)[=:]$", head)
            name = key.group(1).lower() if key else _name_before(toks, i, head) if k == 0 else None
            out.append((name or "", i))
    return tuple(out)


def param_names(template: str, message: str,
                values: list[tuple[str, float | None]] | None = None) -> list[tuple[str, str]]:
    """(name, type) of each parameter of `message` under `template`, aligned with extract_params
    (`values`: its result, when the caller has it): unnamed ones after a preposition or at the start
    take their type as the name ("address"); a name used twice gets _2, _3."""
    values = extract_params(template, message) if values is None else values
    return _names(param_slots(template), values, message.split())


def _names(slots: tuple, values: list[tuple[str, float | None]], toks: list[str]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    n = len(toks)
    for (word, i), (text, num) in zip(slots, values):
        typ = value_type(text, toks[i + 1] if i + 1 < n else "", num)
        name = word or typ
        k = seen[name] = seen.get(name, 0) + 1
        out.append((name if k == 1 else f"{name}_{k}", typ))
    return out


def named_params(template: str, message: str) -> list[tuple[str, float | None, str]]:
    """extract_params with each parameter's name: [(text, number or None, name)]. (One split of the
    message, the template's plan and slots cached: this runs for every line.)"""
    toks = message.split()
    values = _values(_plan(template), toks)
    if not values:
        return []
    names = _names(param_slots(template), values, toks)
    return [(t, n, name) for (t, n), (name, _) in zip(values, names)]

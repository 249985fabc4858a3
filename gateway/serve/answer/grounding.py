"""The kinds of line a question is about, found from the data: the store's templates ranked by the
question's words (a word few templates hold weighs more) and by its identifiers (the templates of the
lines that hold them), each shown with its parameters by name ("Finished task <task> in stage <stage>
... <size> bytes") and an example value of each. The call's prompt lists them and the call grammar
lets the model pick one as a filter and a parameter by name (stats' `of`, top_k's `by`), so a count,
a sum or a lookup is made over the right kind of line and the right value, whatever the log's format.
Knows nothing about the model or the grammar.
"""

from __future__ import annotations

import math
import re
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from gateway.pipeline.fields import named_template, number_of
from gateway.pipeline.query import QueryError, QueryInterrupted, QuerySurface
from gateway.pipeline.query_vocab import template_lines
from gateway.pipeline.store import fts_query
from gateway.serve.answer.evidence import common
from gateway.serve.answer.question import near

MAX_KINDS = 3                 # kinds shown with a question
KEEP_SHARE = 0.6              # a kind scoring under this share of the best one is not shown
MAX_TEMPLATES = 5000          # templates read (the most frequent)
TTL_S = 30.0                  # the templates are re-read at most this often
EXAMPLE_LINES = 20            # a kind's newest lines read for its parameters' names and examples
MAX_SHOWN_PARAMS = 4          # parameters given an example value
EXAMPLE_CHARS = 24            # of an example value; a longer one is cut, marked "…" (not a value to copy)
# a kind's words: what its lines say, not the parts of a name joined by "_" ("ext4_find_entry",
# "YARN_AM_RM_TOKEN": no "entry" nor "AM" of the kind's)
_WORD = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z][A-Za-z0-9]+(?![A-Za-z0-9_])|[\u4e00-\u9fff]+")
# a word the question writes on its own: "attempt" in attempt_1445_0020_m_000001_0 is part of an id
_OWN_WORD = re.compile(r"(?<![\w.])[A-Za-z][A-Za-z0-9]+(?!\w)|[\u4e00-\u9fff]+")
_MASK = re.compile(r"<[A-Z*]+>|<\*>")
_WORDS = re.compile(r"[A-Za-z][A-Za-z0-9]+")        # a question's words (words_of)


@dataclass
class Kind:
    """One template as the call's prompt shows it."""
    id: int
    template: str                          # with each parameter written <name>
    count: int                             # lines of it in the store
    params: list[str] = field(default_factory=list)          # its parameter names, in order
    examples: dict[str, str] = field(default_factory=dict)   # name -> a value from its newest line

    def words(self) -> set[str]:
        """The words its text writes (lower case), its <parameters> left out."""
        return {w.lower() for w in self.literal_words()}

    def literal_words(self) -> list[str]:
        """The words its text writes, in order and as written, its <parameters> left out."""
        return [w for w in _WORD.findall(re.sub(r"<[^<>]*>", " ", self.template)) if w.isascii()]

    def shown(self) -> str:
        ex = ", ".join(f"{k}={v}" for k, v in list(self.examples.items())[:MAX_SHOWN_PARAMS])
        return f"T{self.id} ({self.count} lines): {self.template}" + (f"  (e.g. {ex})" if ex else "")


def render(kinds: Sequence[Kind]) -> str:
    if not kinds:
        return ""
    return "Kinds of stored lines the question may be about:\n" + "\n".join(k.shown() for k in kinds)


class Kinds:
    """kinds(words, tokens) over one store; thread-safe; the templates cached for TTL_S."""

    def __init__(self, surface: QuerySurface) -> None:
        self.surface = surface
        self._lock = threading.Lock()
        self._read = -TTL_S
        self._templates: list[tuple[int, str, int, frozenset[str]]] = []
        self._spread: tuple[list, dict[str, int]] = ([], {})     # per read of the templates

    def _load(self) -> list[tuple[int, str, int, frozenset[str]]]:
        with self._lock:
            if time.monotonic() - self._read > TTL_S:
                rows = template_lines(self.surface, MAX_TEMPLATES)
                self._templates = [(int(i), str(t), int(n), frozenset(w.lower() for w in _WORD.findall(_MASK.sub(" ", t))))
                                   for i, t, n in rows]
                self._read = time.monotonic()
            return self._templates

    def kinds(self, words: Sequence[str], tokens: Sequence[str] = (), alike: Sequence[Sequence[str]] = ()) -> list[Kind]:
        """The kinds the question's content words (lower case) and identifiers point at, best first.
        `alike`: words that are one word of the question (a Chinese term's English glosses: 完成 = finish,
        complete, done): scored once, as the kinds any of them points at (else the rarest gloss wins)."""
        templates = self._load()
        if not templates or not (words or tokens):
            return []
        n = len(templates)
        score: dict[int, float] = {}
        units: list[list[str]] = []
        left = list(dict.fromkeys(w.lower() for w in words))
        for group in alike:
            unit = [w for w in dict.fromkeys(x.lower() for x in group) if w in left]
            left = [w for w in left if w not in unit]
            units += [unit] if unit else []
        for unit in [*units, *([w] for w in left)]:
            hit = [t for t in templates if any(near(w, q) for q in unit for w in t[3])]
            if hit and len(hit) < n:                  # a word every kind holds tells none apart
                weight = math.log((n + 1) / len(hit))
                for t in hit:
                    score[t[0]] = score.get(t[0], 0.0) + weight
        for tok in tokens:
            for tid in self._holding(tok):
                score[tid] = score.get(tid, 0.0) + math.log(n + 1)
        if not score:
            return []
        best = max(score.values())
        by_id = {t[0]: t for t in templates}
        ranked = sorted((i for i in score if score[i] >= KEEP_SHARE * best and i in by_id),
                        key=lambda i: (-score[i], -by_id[i][2]))[:MAX_KINDS]
        return [self._kind(by_id[i], tokens) for i in ranked]

    def spread(self, word: str) -> int:
        """How many of the store's kinds of line write this word (as `kinds` matches words)."""
        w, templates = word.lower(), self._load()
        with self._lock:
            if self._spread[0] is not templates:
                self._spread = (templates, {})
            got = self._spread[1]
        if w not in got:
            got[w] = sum(1 for t in templates if any(near(w, x) for x in t[3]))
        return got[w]

    def _holding(self, token: str) -> list[int]:
        q = fts_query(token) if token.isascii() else None
        if q is None:
            return []
        try:
            rows, _ = self.surface.execute(
                "SELECT DISTINCT l.template_id FROM logs l WHERE l.template_id IS NOT NULL AND l.id IN "
                "(SELECT rowid FROM logs_fts WHERE logs_fts MATCH ? LIMIT 400)", [q])
        except (QueryError, QueryInterrupted, sqlite3.DatabaseError):
            return []
        return [int(r[0]) for r in rows]

    def _holder(self, tid: int, tokens: Sequence[str]) -> list[tuple]:
        """(line, pos, name, text) of the newest line of kind `tid` (among the first 400 holding the token)
        with a parameter whose whole value is one of the question's tokens, first token first; [] when none
        ("request" of "input_userauth_request" is no value of the kind's)."""
        for tok in tokens:
            q = fts_query(tok) if tok.isascii() else None
            if q is None:
                continue
            try:
                rows, _ = self.surface.execute(
                    "SELECT p.line_id, p.pos, p.name, p.text FROM params p WHERE p.line_id = (SELECT max(l.id) FROM "
                    "logs l WHERE l.template_id = ? AND l.id IN (SELECT rowid FROM logs_fts WHERE logs_fts MATCH ? "
                    "LIMIT 400) AND EXISTS (SELECT 1 FROM params v WHERE v.line_id = l.id AND v.text = ?)) "
                    "ORDER BY p.pos", [tid, q, tok])
            except (QueryError, QueryInterrupted, sqlite3.DatabaseError):
                continue
            if rows:
                return [tuple(r) for r in rows]
        return []

    def _kind(self, t: tuple[int, str, int, frozenset[str]], tokens: Sequence[str] = ()) -> Kind:
        """The kind with its parameters' names and an example of each: from a line holding one of the
        question's tokens when one does ("user=inspur" for a question about inspur, not the newest line's
        user, which reads as if the kind were about someone else), else from its newest lines."""
        tid, template, count, _ = t
        try:
            rows, _ = self.surface.execute(
                "SELECT p.line_id, p.pos, p.name, p.text FROM params p WHERE p.line_id IN (SELECT l.id FROM logs l "
                "WHERE l.template_id = ? ORDER BY l.id DESC LIMIT ?) ORDER BY p.line_id DESC, p.pos", [tid, EXAMPLE_LINES])
        except (QueryError, QueryInterrupted, sqlite3.DatabaseError):
            rows = []
        newest = rows[0][0] if rows else None
        names = [str(r[2] or f"p{r[1]}") for r in rows if r[0] == newest]
        examples: dict[str, str] = {}
        for _, pos, name, text in [*self._holder(tid, tokens), *rows]:
            key = str(name or f"p{pos}")
            value = str(text or "")
            if key not in examples and value:
                examples[key] = value if len(value) <= EXAMPLE_CHARS else value[:EXAMPLE_CHARS] + "…"
        named = named_template(template, names)
        return Kind(tid, named, count, names, {k: examples[k] for k in names if k in examples})


def named_param(kind: Kind, question: str, bound: Sequence[str] = (), lines: Sequence[str] = (),
                text: str = "", spread: Callable[[str], int] | None = None) -> str | None:
    """A parameter of the kind the question names: by its name outside `lines` (phrases that pick the
    lines: "charger" in "returning to charger" names the lines, not <charger>) and outside the call's
    `text` ("which running task has the min TID": <tid>, the call's text being "task"), then outside
    `lines` only ("how many kb is X free", text "X free": <free>), then by the unit the kind writes right
    after it ("<size> bytes"; "<battery>%" is named by "percentage"), then by its name anywhere. A name
    that says nothing ("number", "value") is not one, nor a parameter `bound` to a value by the call ("in
    stage 26.0"). Of several named in one pass, the one the fewest kinds of line write (`spread`):
    "running task min TID" asks for <tid>, not <task>, a word of most of a Spark log's kinds."""
    low = question.lower()
    rest = _without(low, lines)
    free = [p for p in kind.params if p not in bound]
    asked, outside = _own_words(low), _own_words(rest)      # a phrase that picks the lines names no unit
    names = {p.lower() for p in kind.params}    # "<address> unit <unit>": "unit" labels <unit>, no unit of <address>
    by_unit = [name for name in free if (unit := _unit_after(kind, name)) and unit.lower() not in names and (
        unit.lower() in outside or any(_says(n, rest, outside) for n in UNIT_NAMES.get(unit.lower(), ())))]
    # a quantity's unit before a word's ("<container> failed: timeout after <duration>s", asked in 秒)
    by_unit.sort(key=lambda name: not a_quantity(kind, name))
    quantities = [name for name in by_unit if a_quantity(kind, name)]
    for words in (_own_words(_without(rest, [text])), _own_words(rest)):
        named = [name for name in free if name.lower() in words]   # by name first: "port" is <port>, not
        if named:                                                   # the <address> before it
            pick = min(named, key=spread) if spread is not None else named[0]
            # a name without a unit beside a named unit ("read the broadcast variable in ms"): the words
            # before <variable> describe the lines; the quantity asked is the one "ms" is written after
            return quantities[0] if quantities and pick not in by_unit and not a_quantity(kind, pick) else pick
    if by_unit:
        return by_unit[0]
    # last, a number by the words its kind writes right before it: "min memory estimated" asks for <size>
    # of "(estimated size <size> B"
    own = _own_words(_without(rest, [text]))     # not the words that pick the lines ("Found block rdd_<rdd>")
    return next((name for name in free if name.lower() in asked), None) or next(
        (name for name in free if number_of(kind.examples.get(name, "")) is not None
         and own & set(_label_words(kind, name))), None)


def _label_words(kind: Kind, name: str) -> list[str]:
    """The words (up to two, none a question's own) the kind writes right before parameter `name`."""
    at = kind.template.find(f"<{name}>")
    literal = kind.template[:max(at, 0)].rsplit(">", 1)[-1]      # back to the parameter before it
    if at <= 0 or not re.search(r"[\s=:(]$", literal):          # "rdd_<rdd>": a piece of an id, no label
        return []
    return [w for w in re.findall(r"[a-z][a-z0-9]+", literal.lower())[-2:] if not common(w)]


def words_of(text: str) -> set[str]:
    """The words of a text (lower case): letters, then letters or digits; what a kind and a question share."""
    return {w.lower() for w in _WORDS.findall(text)}


def a_quantity(kind: Kind, name: str) -> bool:
    """A number with a unit after it ("<took> ms"), not a value labelled by the next parameter's name
    ("<address> port <port>")."""
    unit = _unit_after(kind, name)
    value = kind.examples.get(name)
    return unit is not None and unit.lower() not in {p.lower() for p in kind.params} and \
        (value is None or number_of(value) is not None)


def _without(low: str, phrases: Sequence[str]) -> str:
    for phrase in phrases:
        low = low.replace(phrase.lower(), " ", 1) if phrase.strip() else low
    return low


def _own_words(text: str) -> set[str]:
    return {w.lower() for w in _OWN_WORD.findall(text)} - _SAYS_NOTHING


# The names a question gives a unit the log writes as a symbol or an abbreviation.
UNIT_NAMES: dict[str, tuple[str, ...]] = {
    "%": ("percent", "percentage", "pct", "百分比", "百分之", "占比"),
    "ms": ("millisecond", "毫秒"), "kb": ("kilobyte", "kib"), "mb": ("megabyte", "mib", "兆"),
    "gb": ("gigabyte", "gib"), "bytes": ("字节",), "b": ("byte", "字节"),
    "s": ("second", "sec", "秒"), "sec": ("second", "秒"), "min": ("minute", "分钟"), "h": ("hour", "小时"),
}


_HAN_UNIT_NAMES = sorted({n for names in UNIT_NAMES.values() for n in names if not n.isascii()}, key=len, reverse=True)


def _says(name: str, low: str, words: set[str]) -> bool:
    """The question writes this unit name: a Chinese one anywhere but inside a longer one (秒 of 毫秒), an
    English one as a word (or plural)."""
    if name.isascii():
        return name in words or name + "s" in words
    for longer in _HAN_UNIT_NAMES:
        if name in longer and name != longer:
            low = low.replace(longer, " ")
    return name in low


def _unit_after(kind: Kind, name: str) -> str | None:
    """unit_of, or the symbol "%" written right after the parameter, or the letters its example value
    writes right after its number ("56s", "12ms")."""
    if re.search(r"<" + re.escape(name) + r">%", kind.template):
        return "%"
    glued = _GLUED_UNIT.fullmatch(kind.examples.get(name, "").strip("()[]{}\"'<>,;"))
    return unit_of(kind, name) or (glued.group(1) if glued else None)


_GLUED_UNIT = re.compile(r"[-+]?\d+(?:\.\d+)?([A-Za-z]{1,3})")


_OCCURRENCES = frozenset({"times"})      # "repeated <n> times": a count of occurrences, a quantity too


def unit_of(kind: Kind, name: str, occurrences: bool = False) -> str | None:
    """The word the kind writes right after parameter `name` ("<size> bytes" -> "bytes"), if any; a
    word questions are written in ("<user> from") is none. `occurrences`: "times" is one (what the
    parameter's values add up to), though questions write it too ("how many times" names no parameter)."""
    after = re.search(r"<" + re.escape(name) + r">\s*([A-Za-z]{2,})(?![A-Za-z0-9_])", kind.template)
    word = after.group(1) if after else None
    return word if word and (not common(word) or occurrences and word.lower() in _OCCURRENCES) else None


def param_values(surface: QuerySurface, name: str, line_ids: Sequence[int]) -> dict[int, str]:
    """line id -> the value of its parameter `name` (the lines that have one)."""
    ids = [int(i) for i in line_ids][:100]
    try:
        rows, _ = surface.execute(f"SELECT p.line_id, p.text FROM params p WHERE p.name = ? AND p.line_id IN "
                                  f"({','.join('?' * len(ids))})", [name, *ids])
    except (QueryError, QueryInterrupted, sqlite3.DatabaseError):
        return {}
    return {int(i): str(t) for i, t in rows if t is not None}


_SAYS_NOTHING = frozenset({"number", "value", "word", "id", "time"})   # names given when no word did


def params_valued(surface: QuerySurface, token: str, scan: int = 400) -> list[tuple[int, str]]:
    """(template id, parameter name) of the stored lines (up to `scan` of those holding the token) where a
    parameter's whole value is `token`: "admin" is a <user> of "Failed password for <user> from ..." """
    q = fts_query(token) if token.isascii() else None
    if q is None:
        return []
    try:
        rows, _ = surface.execute(
            "SELECT DISTINCT l.template_id, p.name FROM params p JOIN logs l ON l.id = p.line_id WHERE p.line_id IN "
            "(SELECT rowid FROM logs_fts WHERE logs_fts MATCH ? LIMIT ?) AND p.text = ? AND p.name IS NOT NULL",
            (q, scan, token))
    except (QueryError, QueryInterrupted, sqlite3.DatabaseError):
        return []
    return [(int(t), str(n)) for t, n in rows if t is not None]


def params_of(kinds: Sequence[Kind]) -> list[str]:
    """The parameter names of the kinds shown, first seen first."""
    return list(dict.fromkeys(p for k in kinds for p in k.params))


def shown_call(call: dict[str, Any], kinds: Sequence[Kind]) -> str:
    """What a call counted, in words: "lines of kind T25 (Finished task <task> ...) holding "3.0"", for
    the answer's prompt (say what was counted)."""
    parts = []
    if call.get("template") is not None:
        k = next((k for k in kinds if str(k.id) == str(call["template"])), None)
        # the kind's words only where no line is shown: a 1.5B model quoted "<memory:<memory>" as a value
        shown = k is not None and call.get("op") not in ("lines", "first_last")
        parts.append(f"lines of kind T{call['template']}" + (f" ({k.template})" if shown else ""))
    else:
        parts.append("lines")
    for name, value in (call.get("where") or {}).items():
        parts.append(f"where {name} = {value}")
    if call.get("text"):
        parts.append(f'holding "{call["text"]}"')
    for key in ("host", "component", "level"):
        if call.get(key):
            parts.append(f"{key} {call[key]}")
    if call.get("last_minutes"):
        parts.append(f"in the last {call['last_minutes']} minutes")
    for key in ("since", "until"):
        if call.get(key):
            parts.append(f"{key} {call[key]}")
    return " ".join(parts)

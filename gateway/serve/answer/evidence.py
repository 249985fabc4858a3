"""The lines a question points at by its rare tokens: an id, a user name, an address, a number the
question writes that few stored lines hold as a whole token. A lookup ("what happened to block X",
"which port did user Y use") is answered by reading such a line, not by counting lines, so the answer
prompt shows them beside the query's result, and the answer check accepts a lookup answer only when
it quotes one of them. Knows nothing about the model or the call grammar.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from gateway.pipeline.query import _HOST, _LEVEL, _TIME, QueryError, QueryInterrupted, QuerySurface, _line
from gateway.pipeline.store import fts_query
from gateway.serve.answer.glossary import english_terms
from gateway.serve.answer.question import is_error, question_times, without_window
from gateway.serve.answer.render import again, fold, header_fields, message_of
from gateway.serve.prompts import is_chinese

RARE_MAX_LINES = 40           # a token held by at most this many lines identifies them
SCAN_LINES = 400              # candidate lines read per token (FTS phrase hits, then whole-token checked)
MAX_TOKENS = 4                # question tokens tried
MAX_EVIDENCE = 3              # lines shown
MAX_WORST = 2                 # a cut listing's lines at an error level or worse shown after it
_TOKEN = re.compile(r"[A-Za-z0-9_/][\w.:/@$\-]*[A-Za-z0-9_]|\d")
# Words a question is written in: never an identifier (kept short; the store decides the rest by
# how many lines hold a token).
_COMMON = frozenset("""a an the of in on at to for from by with and or is was were are be been did do does how many
much what which when where who why whose there this that it its any all not no yes log logs line lines
time times number""".split())


@dataclass
class Evidence:
    tokens: list[str] = field(default_factory=list)          # the rare tokens found, rarest first
    lines: list[dict[str, Any]] = field(default_factory=list)  # lines holding them (query.py's line dicts)
    ids: list[str] = field(default_factory=list)    # identifiers the question names that the store holds
                                                    # (an id, a dotted name, a number of 3+ digits), rare or not


def _whole(token: str, exact: bool = False) -> re.Pattern:
    """The token as a whole token, or as the prefix of an id ("rdd_26" of "rdd_26_0"; not "2001" for
    "200") or, an id of parts itself, as its last parts ("m_000003_0" of "attempt_1445_0020_m_000003_0": an
    operator names an id by the part that tells it apart); `exact`: never a part of a longer id or number.
    In any case, as the store's text search finds words: "management" for the log's "Management"."""
    after = r"(?![A-Za-z0-9_]|[.:\-]\w)" if exact else r"(?![A-Za-z0-9]|\.\d)"
    tail = not exact and "_" in token.strip("_") and any(c.isdigit() for c in token)
    before = r"(?<![A-Za-z0-9.\-])" if tail else r"(?<![A-Za-z0-9_.\-])"
    return re.compile(before + re.escape(token) + after, re.IGNORECASE)


def _scan(surface: QuerySurface, tok: str, columns: str, text_at: int, rx: re.Pattern) -> tuple[list, int] | None:
    """(up to SCAN_LINES stored rows, `columns` of `logs l`, that FTS finds for `tok` and whose text, column
    `text_at`, `rx` matches; how many FTS hits they were taken from: SCAN_LINES when the scan was cut).
    None when the token is nothing FTS can look up (not ASCII, no word)."""
    q = fts_query(tok) if tok.isascii() else None
    if q is None:
        return None
    try:
        rows, _ = surface.execute(f"SELECT {columns} FROM logs l WHERE l.id IN "
                                  "(SELECT rowid FROM logs_fts WHERE logs_fts MATCH ? LIMIT ?)", (q, SCAN_LINES))
    except (QueryError, QueryInterrupted, Exception):     # a token FTS cannot read holds no line
        return [], 0
    return [r for r in rows if rx.search(r[text_at])], len(rows)


def _few(surface: QuerySurface, tok: str, held: int, scanned: int) -> bool:
    """The lines holding the token whole are at most RARE_MAX_LINES: `held` of the `scanned` FTS hits
    read hold it whole. A scan cut at SCAN_LINES is a sample ("3" of "line 3" is a whole token in few of
    the first hits but in thousands of lines past them): the store's FTS hits are counted, up to where
    the sample's share of them would pass the limit."""
    if not held or held > RARE_MAX_LINES:
        return False
    if scanned < SCAN_LINES:
        return True
    bound = RARE_MAX_LINES * SCAN_LINES // held         # FTS hits at which the estimate reaches the limit
    try:
        rows, _ = surface.execute("SELECT count(*) FROM (SELECT rowid FROM logs_fts WHERE logs_fts MATCH ? "
                                  "LIMIT ?)", (fts_query(tok), bound + 1))
    except (QueryError, QueryInterrupted, Exception):
        return False
    return int(rows[0][0]) <= bound


def candidates(question: str) -> list[str]:
    """Tokens of the question that could identify lines: with a digit, or a word outside _COMMON with a
    capital or digit or underscore inside, or any other word of 3+ letters (the store decides); not the
    times of a window it writes ("20:10:50 到 20:10:59": since and until; one time may name its line)."""
    seen: list[str] = []
    times = question_times(question)      # a pair of written times is the call's window, not two identifiers
    window = {p for x in times for p in x.split()} if len(times) >= 2 else set()
    for t in _TOKEN.findall(without_window(question)):
        t = t.rstrip(".:")
        if len(t) < 2 and not t.isdigit() or t.lower() in _COMMON or t in seen or t in window:
            continue
        seen.append(t)
    # identifiers first: digits, then mixed case / underscores, then plain words
    return sorted(seen, key=lambda t: (not any(c.isdigit() for c in t),
                                       not (any(c.isupper() for c in t[1:]) or "_" in t), -len(t)))


def find(surface: QuerySurface, question: str, names: Sequence[str] = ()) -> Evidence:
    """The question's rare tokens and up to MAX_EVIDENCE of the lines holding the most of them (whole
    tokens), oldest first. names: hosts and components the question names, a field filter of the call:
    their parts point at no line in particular."""
    out = Evidence()
    hits: dict[int, tuple] = {}
    score: dict[int, int] = {}
    tried = 0
    before = words_before(question)
    # a question written in Chinese writes a name in the script the log writes it in ("root 最后一次..."):
    # each Latin-script token the store holds is a condition, however many lines hold it, as an id is
    named = is_chinese(question)
    for tok in candidates(question):
        if part_of(tok, names):
            continue
        if tried >= MAX_TOKENS * 2:
            break
        got = _scan(surface, tok, f"l.id, {_TIME}, {_HOST}, l.component, {_LEVEL}, l.time_text, l.text, "
                    "l.template_id", 6, _whole(tok))
        if got is None:
            continue
        rows, scanned = got
        tried += 1
        if rows and (is_id(tok) or named):
            out.ids.append(tok)                  # a condition however many lines hold it
        if not _few(surface, tok, len(rows), scanned):
            continue
        out.tokens.append(tok)
        # the word the question writes before the token, before it in the line too ("task 21.0", not
        # "stage 21.0"), counts as one more match
        near = re.compile(r"(?<![\w])" + re.escape(before[tok]) + r"\W{1,3}" + re.escape(tok), re.I) \
            if before.get(tok) else None
        for r in rows:
            hits[r[0]] = r
            score[r[0]] = score.get(r[0], 0) + 1 + (1 if near is not None and near.search(r[6]) else 0)
    if out.ids:     # an identifier the question names is a condition: a line holding none of them is about
        # another entity ("which container got assigned to attempt X": the other attempts' lines are not it)
        named_ids = [_whole(t) for t in out.ids]
        score = {i: s for i, s in score.items() if any(rx.search(hits[i][6]) for rx in named_ids)}
    top = max(score.values(), default=0)         # the lines holding the most of the tokens, only; those of
    # the question's most identifying token first ("nagios" before "fail": candidates' order), then those
    # that say more of the question's other words (a pid asked about with "too many authentication
    # failures": of the pid's many lines, "Disconnecting: Too many authentication failures for admin")
    whole = [_whole(t) for t in out.tokens]
    rank = {i: min((k for k, rx in enumerate(whole) if rx.search(hits[i][6])), default=MAX_TOKENS * 2)
            for i in score if score[i] == top}
    said = _words_said(question, out.tokens)
    ranked = sorted(rank, key=lambda i: (rank[i], -said(hits[i][6]), hits[i][1] or 0, i))
    # a surface without a template column (the fleet node's) gives 7 columns: each line a kind of its own
    best = _one_per_kind(ranked, [hits[i][7] if len(hits[i]) > 7 else None for i in ranked])[:MAX_EVIDENCE]
    out.lines = [_line(hits[i][:7]) for i in sorted(best, key=lambda i: (hits[i][1] or 0, i))]
    return out


def _words_said(question: str, tokens: Sequence[str]) -> Callable[[str], int]:
    """line -> how many of the question's other words (3+ letters, not a question's own; for Chinese the
    English its glossary terms give) begin a word of the line ("fail" begins "failures")."""
    words = {w.lower() for w in re.findall(r"[A-Za-z]{3,}", question) if not common(w)}
    words |= {w.lower() for w in english_terms(question) if len(w) >= 3}
    words -= {t.lower() for t in tokens}
    rx = [re.compile(r"(?<![A-Za-z])" + re.escape(w), re.I) for w in sorted(words)]
    return lambda line: sum(1 for x in rx if x.search(line))


def in_log(surface: QuerySurface) -> Callable[[str], bool]:
    """logged(token) for the answer check: whether a stored line holds the token whole (not as a part
    of a longer id or number)."""
    def logged(tok: str) -> bool:
        got = _scan(surface, tok, "l.text", 0, _whole(tok, exact=True))
        return bool(got and got[0])
    return logged


def _one_per_kind(ids: list[int], kinds: list[Any]) -> list[int]:
    """The lines in order, the first of each kind of line (template) before a second of any: three lines of
    "Connection closed by <address>" hid the one "session closed for user fztu" that a question about
    "closed" may mean."""
    seen: set = set()
    first = [i for i, k in zip(ids, kinds) if k is None or not (k in seen or seen.add(k))]
    taken = set(first)
    return first + [i for i in ids if i not in taken]


_CLOCK = re.compile(r"\d{1,2}:\d{2}(:\d{2})?|\d{4}-\d{2}-\d{2}")


def part_of(token: str, names: Sequence[str]) -> bool:
    """The token is one of the names or a piece of one between separators ("pam_unix" of
    "sshd(pam_unix)", "capper" of "line3/capper")."""
    low = token.lower()
    return any(re.search(r"(?<![A-Za-z0-9_])" + re.escape(low) + r"(?![A-Za-z0-9_])", n.lower()) for n in names)


def is_id(token: str) -> bool:
    """An identifier: letters with digits, "_" or "." inside or digits after them, or a number of 3+
    digits; not a time, a date or a small number (a count or a window: "top 3", "last 10 minutes")."""
    if _CLOCK.fullmatch(token):
        return False
    if token.isdigit():
        return len(token) >= 3
    return any(c.isdigit() or c in "_." for c in token[1:-1]) and any(c.isalpha() for c in token) \
        or bool(re.fullmatch(r"\d+(\.\d+){1,3}|[A-Za-z][A-Za-z_-]*\d+", token))   # "ES2", "zone2", "V17"


def common(word: str) -> bool:
    """A word questions are written in (never a value)."""
    return word.lower() in _COMMON


def words_before(question: str) -> dict[str, str]:
    """token -> the word right before it in the question (function words skipped over: none); only with
    spaces or punctuation between them ("waited ... 保留 1 位小数": the 1 is not after "waited")."""
    found = list(_TOKEN.finditer(question))
    return {b.group().rstrip(".:"): a.group().rstrip(".:") for a, b in zip(found, found[1:])
            if _GAP.fullmatch(question[a.end():b.start()]) and a.group().rstrip(".:").lower() not in _COMMON
            and not any(c.isdigit() for c in a.group())}


_GAP = re.compile(r"[\s\"'“”‘’:=,()\[\]-]*")


def render(ev: Evidence) -> str:
    """The lines for the answer's prompt."""
    if not ev.lines:
        return ""
    toks = ", ".join(f'"{t}"' for t in (ev.tokens or ev.ids))
    shown = "\n".join(f"- {_shown(x)}{again(n, first, shown=x)}" for x, n, first in fold(ev.lines))
    return f"Stored lines that hold {toks} (read them for what the question asks):\n{shown}"


def of_kind(surface: QuerySurface, call: dict[str, Any], count: int, kinds: Sequence[Any]) -> list[dict[str, Any]]:
    """Of a listing cut short (`count` lines), up to MAX_EVIDENCE lines of the first listed kind (best first:
    the question's words chose it) that holds fewer of its lines, shown again after the listing's clipped
    newest ones: the 73 lines of an attempt id show state changes first, and "why did it exit abnormally"
    asks about its "Diagnostics report ... NoRouteToHostException" lines."""
    for k in kinds:
        r = surface.run({**call, "op": "lines", "template": k.id})
        if r.get("count") and not r.get("text_relaxed_to") and r["count"] < count:
            return (r.get("lines") or [])[:MAX_EVIDENCE]
    return []


def worst(surface: QuerySurface, call: dict[str, Any], count: int) -> list[dict[str, Any]]:
    """Of a listing cut short (`count` lines), its newest MAX_WORST lines at an error level or worse, when
    some of its lines are not: "why did attempt X die" listed its 73 lines' newest state changes; its one
    FATAL line ("... exited : java.net.NoRouteToHostException") says why."""
    levels = surface.run({**call, "op": "top_k", "by": "level", "k": 20}).get("top") or []
    bad = [t for t in levels if is_error(str(t.get("value") or ""))]
    if not bad or sum(int(t.get("count") or 0) for t in bad) >= count:
        return []
    return (surface.run({**call, "op": "lines", "level": [t["value"] for t in bad]}).get("lines") or [])[:MAX_WORST]


def _shown(line: dict[str, Any]) -> str:
    """The line whole, its time before it unless its text begins with it (said twice, it costs the
    prompt); a long one as time, level and component, then its message (render.message_of)."""
    t, text = str(line.get("time_text") or ""), str(line.get("text", ""))
    message = message_of(line)
    if message is not None:
        fields = ", ".join(v for v in header_fields(line).values() if v)
        return f"{t} ({fields}): {message}" if t else f"({fields}): {message}"
    return text if not t or text.startswith(t) else f"{t} {text}"


def quoted(answer: str, ev: Evidence, question: str) -> bool:
    """The answer quotes one of the evidence lines: some word of 3+ characters (or a number) that the
    line holds and the question does not."""
    asked = {w.lower() for w in _TOKEN.findall(question)}
    said = {w.lower() for w in _TOKEN.findall(answer)} - asked
    for line in ev.lines:
        words = {w.lower() for w in _TOKEN.findall(line["text"])}
        if any((len(w) >= 3 or w.isdigit()) and w in words for w in said):
            return True
    return False


def tokens(text: str) -> list[str]:
    """The text's words, identifiers, addresses and numbers as the evidence reads them (_TOKEN)."""
    return _TOKEN.findall(text)


SPAN_TOKENS = 3               # consecutive tokens of a line's message an answer that reads it holds


def holds_span(answer: str, line: dict[str, Any], question: str = "") -> bool:
    """The answer writes a run of SPAN_TOKENS consecutive tokens of the line's message (its written time
    left out), or the whole message when it is shorter, one of them at least not the question's: it
    reads the line, not only a value, a paraphrase ("logged in from 187.141.143.180" does not read
    "Invalid user postgres from ...") or the question's own words ("an invalid user boot is LabSZ")."""
    text = str(line.get("text", ""))
    t = str(line.get("time_text") or "")
    if t:
        text = text.replace(t, " ", 1)
    words = [w.lower() for w in _TOKEN.findall(text)]
    said = [w.lower() for w in _TOKEN.findall(answer)]
    need = min(SPAN_TOKENS, len(words))
    if not need:
        return True
    asked = {w.lower() for w in _TOKEN.findall(question)}
    runs = {tuple(words[i:i + need]) for i in range(len(words) - need + 1)}
    return any((run := tuple(said[i:i + need])) in runs and not asked.issuperset(run)
               for i in range(len(said) - need + 1))

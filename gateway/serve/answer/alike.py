"""Answers that say one thing twice at most: a run of RUN units written a third time is cut to "…".

Lines of one template share long runs of words (the template's own words, a timestamp's date and hour,
a host and a pid). A 1.5B model answering from a listing copies line after line of them, and the
repetition guard (gateway.llm.repetition) lets it, since the prompt holds them; a fallback that quotes
lines of one second writes their header again and again. The third time a run is written it reads as
a loop and says nothing new, so `fold` cuts it and keeps the rest of its line (the part that differs is
the part worth reading). An answer that ran into max_tokens was still repeating when it was cut, so
there a run is written once only. The decode stops when a listing goes on past MAX_CUT_LINES lines
that each needed a cut (Watch): a long listing costs the question no time either.

Units: words and numbers, each other mark, and each CJK character on its own (whitespace and line
breaks between them do not count). Pure functions but Watch, which follows one answer's tokens.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import replace
from typing import Callable

RUN = 10            # units in a run that lines of one kind share
TIMES = 2           # times an answer writes one run
MAX_CUT_LINES = 2   # lines with a cut before Watch ends the answer

_CJK = "\u3400-\u9fff\uf900-\ufaff"
_WORD = re.compile(f"[{_CJK}A-Za-z0-9_]")                           # a unit that is no mark
_UNIT = re.compile(f"[{_CJK}]|[A-Za-z0-9_]+|[^\\sA-Za-z0-9_{_CJK}]")


def cuts(text: str, times: int = TIMES) -> list[tuple[int, int]]:
    """The character spans (start, end) of the text that write a run of RUN units for the
    (times+1)-th time, overlapping ones joined."""
    u = list(_UNIT.finditer(text))
    words = [m.group() for m in u]
    seen: dict[tuple[str, ...], int] = {}
    cut = [False] * len(u)
    for i in range(len(u) - RUN + 1):
        run = tuple(words[i:i + RUN])
        if seen.get(run, 0) >= times:
            cut[i:i + RUN] = [True] * RUN
        elif not any(cut[i:i + RUN]):       # written whole, so it counts
            seen[run] = seen.get(run, 0) + 1
    for i, m in enumerate(u):       # a line's leading mark ("-", "*", "•") stays: it says a line begins
        if cut[i] and not _WORD.match(m.group()) and (i == 0 or "\n" in text[u[i - 1].end():m.start()]):
            cut[i] = False
    spans: list[tuple[int, int]] = []
    for i, c in enumerate(cut):
        if c:
            if spans and i and cut[i - 1]:
                spans[-1] = (spans[-1][0], u[i].end())
            else:
                spans.append((u[i].start(), u[i].end()))
    return spans


def fold(text: str, times: int = TIMES) -> str:
    """The text with each run written more than `times` times cut to "…" (line breaks inside a cut
    kept)."""
    out, at = [], 0
    for start, end in cuts(text, times):
        out.append(text[at:start] + "…" + "\n" * text.count("\n", start, end))
        at = end
    return "".join(out) + text[at:]


def folded(checked, times: int = TIMES):
    """A checked answer (answer.check.Checked) with its repeated runs cut."""
    text = fold(checked.text, times)
    return checked if text == checked.text else replace(checked, text=text)


def ended(answer: str) -> str:
    """An answer that Watch ended: the line it was writing left out for "…"."""
    head, _, _ = answer.rpartition("\n")
    return head + "\n…"


def cut_short(answer: str) -> str:
    """An answer stopped at its end time: all it wrote, marked "…". A line it was quoting holds what was
    asked as far as it got (cut back to its last full stop, a bad datanode's line was lost whole)."""
    return answer.rstrip() + " …"


class Watch:
    """Follows one answer's tokens: __call__(token) -> False once the line being written needs a cut
    and MAX_CUT_LINES lines before it did (the answer goes no further; `ended` drops that line)."""

    def __init__(self, token_bytes: Callable[[int], bytes]) -> None:
        self._bytes = token_bytes
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._text = ""
        self.stopped = False

    def __call__(self, tid: int) -> bool:
        piece = self._decoder.decode(self._bytes(tid))
        self._text += piece
        if not piece.strip():
            return True
        line_start = self._text.rfind("\n") + 1
        spans = cuts(self._text)
        if not spans or spans[-1][1] <= line_start:
            return True
        lines_cut = {self._text.count("\n", 0, s) for s, _ in spans if s < line_start}
        self.stopped = len(lines_cut) >= MAX_CUT_LINES
        return not self.stopped

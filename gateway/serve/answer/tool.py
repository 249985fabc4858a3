"""The question's tool: QueryTool.plan(turns) grounds one question (its times, values, the kinds of line and
identifiers it points at) and gives the call's prompt and grammar as a QueryPlan (plan.py), which runs the
call and checks the answer. One per appliance, shared by the engine thread's jobs.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Mapping, Sequence

from gateway.llm.constrained import Constraint, Grammar, LogitsMask, Vocabulary
from gateway.pipeline.query import QuerySurface
from gateway.pipeline.query_vocab import known_values, known_words
from gateway.serve.answer import evidence, grounding
from gateway.serve.answer.call import (CALL_INSTRUCTION, CALL_PREFIX, GRAMMAR_TTL_S, MAX_CALL_TOKENS, MAX_VALUES,
                                       MAX_WORDS, call_grammar)
from gateway.serve.answer.glossary import gloss, term_groups
from gateway.serve.answer.plan import QueryPlan
from gateway.serve.answer.question import QUOTED, Grounding, absent_levels, ground, log_names
from gateway.serve.prompts import is_chinese


class QueryTool:
    """The store's query surface and the call grammar over one tokenizer. plan(turns) -> QueryPlan.
    Thread-safe. The store's known values and words are re-read at most every GRAMMAR_TTL_S; each
    question's grammar offers what it names (gateway.serve.answer.question); the last few are kept."""

    def __init__(self, surface: QuerySurface, tokenizer) -> None:
        self.surface = surface
        self.tokenizer = tokenizer
        self._vocab: Vocabulary | None = None
        self._values: tuple = ((), (), (), ())
        self._read = -GRAMMAR_TTL_S
        self._constraints: dict[tuple, Constraint] = {}
        self._lock = threading.Lock()
        self.kinds = grounding.Kinds(surface)

    def grounding(self, question: str) -> Grounding:
        with self._lock:
            if time.monotonic() - self._read > GRAMMAR_TTL_S:
                values = tuple(tuple(known_values(self.surface, f, MAX_VALUES)) for f in ("host", "component", "level"))
                self._values = values + (tuple(known_words(self.surface, MAX_WORDS)),)
                self._read = time.monotonic()
            return ground(question, *self._values)

    def vocabulary(self) -> Vocabulary:
        with self._lock:
            if self._vocab is None:
                self._vocab = Vocabulary.of(self.tokenizer)
            return self._vocab

    def boxes(self, question: str) -> tuple[str, ...] | None:
        """None on a box; on a fleet node (a surface with boxes()) the boxes the question names by name."""
        if not hasattr(self.surface, "boxes"):
            return None
        low = question.lower()
        return tuple(b for b in self.surface.boxes()
                     if re.search(r"(?<![A-Za-z0-9_])" + re.escape(b.lower()) + r"(?![A-Za-z0-9_])", low))

    def constraint(self, g: Grounding, boxes: tuple[str, ...] | None = None) -> Constraint:
        vocab = self.vocabulary()
        with self._lock:
            self._vocab = vocab
            key = (g.key(), boxes)
            c = self._constraints.get(key)
            if c is None:
                while len(self._constraints) >= 8:
                    self._constraints.pop(next(iter(self._constraints)))
                c = Constraint(Grammar(call_grammar(g.hosts, g.components, g.levels, g.words, g.phrases, g.times,
                                                    g.recent, g.ops, g.by, g.of_words, g.by_words, named=True,
                                                    templates=g.templates, params=g.params, minutes=g.minutes,
                                                    whole=g.whole, boxes=boxes)),
                               self._vocab)
                self._constraints[key] = c
            return c

    def plan(self, turns: Sequence[Mapping[str, str]], before: str = "") -> QueryPlan:
        """`before`: the asks of the same message before this one ("How many X? Which station had the
        most?"): grounded with it (its phrases and values), the later ask names no subject of its own."""
        turns = [dict(t) for t in turns]
        question = turns[-1]["content"]
        prefix = self.tokenizer.encode(CALL_PREFIX, parse_special=False)
        about = f"{before} {question}".strip()
        g = self.grounding(about)
        # named: a field filter, not what a kind of line says; nor is the log's own name ("spark日志里")
        fields = [*g.hosts, *g.components, *log_names(about, self._values[2])]
        ev = evidence.find(self.surface, about, fields)
        # the question's rare tokens (an id, a user, an address) are filters the lines hold as they are
        named = list(dict.fromkeys([*ev.tokens, *ev.ids]))
        g.words = [*named, *(w for w in g.words if w not in named)]
        # the words of a quoted phrase (the lines' own words) point at their kind first
        quoted = [w for p in g.phrases for w in re.findall(r"[A-Za-z][A-Za-z0-9]+", p)]
        kinds = self.kinds.kinds([w for w in [*quoted, *g.content] if not evidence.part_of(w, fields)], named,
                                 term_groups(QUOTED.sub(" ", about)))
        g.templates, g.params = [str(k.id) for k in kinds], grounding.params_of(kinds)
        shown = grounding.render(kinds)
        if is_chinese(question) and (words := gloss(QUOTED.sub(" ", question))):
            shown = f"The question's words in English: {words}.\n{shown}".strip()
        turns[-1]["content"] = question + "\n\n" + (shown + "\n" if shown else "") + CALL_INSTRUCTION
        c = self.constraint(g, self.boxes(question))
        return QueryPlan(self, turns, question, LogitsMask(c, MAX_CALL_TOKENS), prefix, evidence=ev, kinds=kinds,
                         absent_levels=self.absent_levels(question))

    def absent_levels(self, question: str) -> list[str]:
        """Levels the question names as logs write one ("WARN") that no stored line is at, nor holds as a
        word (a header the ingest did not read is no proof of absence). After grounding(): its levels."""
        return [w for w in absent_levels(question, self._values[2])
                if not self.surface.run({"op": "count", "text": w}).get("count")]

"""One chat job's store query: QueryTool.plan(turns) (tool.py) grounds the question (its times, values, the
kinds of line and identifiers it points at), gives the call's prompt and grammar; QueryPlan.finish runs the call
the model wrote (with the question's identifiers and parameter bindings) and gives the answer's prompt;
QueryPlan.check checks the answer against it. Run on the engine thread (EngineThread._query_answer).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from gateway.llm.constrained import LogitsMask
from gateway.pipeline.query import OPS
from gateway.serve.answer import check as answer_check
from gateway.serve.answer import alike, evidence, grounding
from gateway.serve.answer.call import ANSWER_INSTRUCTION, CALL_PREFIX, COPY_IN_CHINESE, _tidy, parse_call
from gateway.serve.answer.glossary import english_terms
from gateway.serve.answer.question import question_phrases, span_s, which_end, writes_duration
from gateway.serve.answer.detail import _CONDITIONS, ResultDetail
from gateway.serve.answer.kind_choice import KindChoice
from gateway.serve.answer.render import _num, render_result
from gateway.serve.prompts import ANSWER_IN_CHINESE, is_chinese

@dataclass
class QueryPlan(KindChoice, ResultDetail):
    """One chat job's tool step: the call prompt's extra tokens, its mask, and after the call the answer
    messages. Built by QueryTool.plan; run on the engine thread (see EngineThread._serve_query)."""
    tool: Any                            # the QueryTool (tool.py) that planned it: its surface and kinds
    turns: list[dict[str, str]]          # the conversation, the last user turn holding the call instruction
    question: str
    mask: LogitsMask
    prefix_tokens: list[int]
    call: dict[str, Any] | None = None
    result: dict[str, Any] = field(default_factory=dict)
    call_text: str = ""
    rendered: str = ""                   # the result as the answer's prompt quoted it (finish)
    evidence: evidence.Evidence = field(default_factory=evidence.Evidence)   # lines of its rare tokens
    kinds: list[grounding.Kind] = field(default_factory=list)               # shown with the question
    absent_levels: list[str] = field(default_factory=list)   # levels it names the store has no line at
    _summed: set = field(default_factory=set)       # ids of the lines a count's parameter total covers
    _tops: dict = field(default_factory=dict)       # param_tops by its call (shorter() renders again)
    _of: str | None = None                          # a stats call's `of`, when it ran as first_last
    _shown: int | None = None                       # lines of a listing shown (None: all; shorter())
    _ev_shown: int | None = None                    # ... of the evidence shown after it (None: all)
    _ev_count: int = 0                              # evidence lines the last _messages had to show
    _listed: str = ""                               # a partial listing's figures over all its lines
    _of_kind: list = field(default_factory=list)    # a cut listing's lines of the question's best kind, and
                                                    # its worst (error or worse) lines (finish)
    ended: bool = False                             # the answer's decode was ended by alike.Watch
    ran_out: bool = False                           # ... or by max_tokens (it was still going)
    timed_out: bool = False                         # ... or at its end time (query_job: ANSWER_END_MS)

    def finish(self, call_text: str) -> list[dict[str, str]]:
        """Parse and run the call; -> the messages for the answer (the call and its result in them)."""
        self.call_text = call_text
        self._summed, self._of, self._tops = set(), None, {}     # of this call only
        try:
            self.call = _tidy(parse_call(call_text), question_phrases(self.question))
            self.call, self.result = self._run_grounded(self.call)
            if self.result.get("top"):      # lines with no host (or component) are no host called ""
                self.result["top"] = [t for t in self.result["top"] if str(t.get("value") or "").strip()]
        except ValueError as exc:
            self.result = {"call": {"text": CALL_PREFIX + call_text}, "error": f"the call did not parse: {exc}"}
        if self.call and self.call.get("op") == "count" and self.result.get("count"):
            self.result["of_all"] = self.tool.surface.run({"op": "count"}).get("count")   # a count of every line
        self._without_text()
        self._capture_asked()
        self._listed = self._listing_figures()
        self._shown = self._ev_shown = None
        self._of_kind = []                 # a cut listing of no kind: its lines of the question's best kind
        listed = self.result.get("lines") or []
        if (self.call or {}).get("op") == "lines" and self.call.get("template") is None and not self.evidence.lines \
                and self.result.get("count", 0) > len(listed):
            self._of_kind = evidence.of_kind(self.tool.surface, self.call, self.result["count"], self.kinds)
        if (self.call or {}).get("op") == "lines" and self.result.get("count", 0) > len(listed):
            seen = {x.get("id") for x in self._of_kind}
            self._of_kind += [x for x in evidence.worst(self.tool.surface, self.call, self.result["count"]) if x.get("id") not in seen]
        return self._messages()

    def _read(self) -> evidence.Evidence:
        """The evidence the answer reads: the question's rare-token lines, or a cut listing's lines of its kind."""
        ev = self.evidence
        return evidence.Evidence(ev.tokens, [*ev.lines, *self._of_kind], ev.ids) if self._of_kind else ev

    def shorter(self) -> list[dict[str, str]] | None:
        """The answer's messages with one line fewer shown: a listing's (op lines) last down to
        LISTED_KEPT, then the evidence lines' last down to one, then the listing's down to one; None when
        there is none to leave out. For an answer whose prompt would not be read by its due time."""
        listed = self.result.get("lines") or []
        shown = len(listed) if self._shown is None else self._shown
        ev = self._ev_count if self._ev_shown is None else self._ev_shown
        cut = (self.call or {}).get("op") == "lines" and not self.result.get("error")
        if cut and shown > LISTED_KEPT:
            self._shown = shown - 1
        elif ev > 1:
            self._ev_shown = ev - 1
        elif cut and shown > 1:
            self._shown = shown - 1
        else:
            return None
        return self._messages()

    def _messages(self) -> list[dict[str, str]]:
        """The answer's messages: the call, its result in words (the first _shown of a listing's lines,
        all when None), the lines of the question's rare tokens, the instruction."""
        listed = self.result if self._shown is None else {**self.result, "lines": self.result["lines"][:self._shown]}
        self.rendered = render_result(listed, which_end(self.question), is_chinese(self.question))
        if self.call and not self.result.get("error"):     # what was counted, in words
            self.rendered = f"The query read {grounding.shown_call(self.call, self.kinds)}. {self.rendered}"
        if self.call and self.call.get("op") == "count" and self.result.get("count"):
            self.rendered += self._count_detail() + self._split()
        self.rendered += self._listed
        in_result = {x.get("id") for x in listed.get("lines") or []} | self._summed
        ev = self._read()
        kind_ids = {x.get("id") for x in self._of_kind}      # shown again: the listing's text is clipped
        extra = evidence.Evidence(ev.tokens, [x for x in ev.lines if x.get("id") not in in_result - kind_ids], ev.ids)
        self._ev_count = len(extra.lines)
        extra.lines[self._ev_shown or len(extra.lines):] = []        # shorter(): the first ones kept
        if extra.lines and not self._summed_up():   # the lines the question's rare tokens point at: a lookup reads them
            self.rendered += "\n\n" + evidence.render(extra)
        answer = ANSWER_INSTRUCTION.format(result=self.rendered)
        if is_chinese(self.question):
            answer += ANSWER_IN_CHINESE + COPY_IN_CHINESE
        shown = json.dumps(self.call, ensure_ascii=False) if self.call else CALL_PREFIX + self.call_text
        # the question as asked: the kinds listed for the call stay out of the answer's prompt (a 1.5B
        # model quoted their example values as the answer); the prefill cost is the same
        asked = [*self.turns[:-1], {"role": "user", "content": self.question}]
        return [*asked, {"role": "assistant", "content": shown}, {"role": "user", "content": answer}]

    def _without_text(self) -> None:
        """A count whose text matches nothing together with its other conditions (a component, a level, a
        window) says what those match alone: "How many entries did component X write" was called with the
        log word "entries" as its text; a question about a text X never writes reads 0 and the other count."""
        call = self.call or {}
        if call.get("op") != "count" or not self.result.get("no_match") or not call.get("text") or \
                not any(call.get(k) for k in _CONDITIONS if k != "text"):
            return
        for drop in (("text",), ("text", "template")):      # the kind, too: the model's guess beside the text
            rest = {k: v for k, v in call.items() if k not in drop}
            if any(rest.get(k) for k in _CONDITIONS) and (found := self.tool.surface.run(rest)).get("count"):
                what = f'"{call["text"]}"' + (f" and kind T{call['template']}" if "template" in drop and
                                               call.get("template") is not None else "")
                self.result["without_text"] = {"text": what, "count": found["count"]}
                return

    def _summed_up(self) -> bool:
        """The call found the numbers it asked for (stats, or a count's asked parameter): other lines beside
        them were read as the answer by a 1.5B model."""
        op = (self.call or {}).get("op")
        return bool(op == "stats" and self.result.get("n")) or bool((self.result.get("param_stats") or {}).get("n"))

    def _capture_asked(self) -> None:
        """The result's lines get the value of the parameter the question asks for (`captured`, said
        first by the renderer: "port is 51966"): a 1.5B model otherwise reads another value off the line."""
        mine = self._kind_of(self.call or {})
        lines = [x for x in [*(self.result.get("lines") or []), *(self.result.get(e) for e in ("first", "last"))]
                 if isinstance(x, dict) and x.get("id") is not None and not x.get("captured")]
        for kind in ([mine] if mine is not None else self.kinds) if lines else []:   # no kind: a listed one's
            name = self._named(kind, self.call or {}) or \
                (self._of if self._of in kind.params else None)     # else the stats' `of` it came from
            got = grounding.param_values(self.tool.surface, name, [x["id"] for x in lines]) if name else {}
            for x in lines:
                if x["id"] in got:
                    x["captured"] = {name: got[x["id"]]}
            if got:
                return

    def _run_grounded(self, call: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Runs the call the model wrote, held to what the question says, in this order: the words of
        its own host/component filter leave its text; a call without a condition reads the best kind; a
        lookup reads a kind that has the value asked; the question's rare tokens and ids join the text
        (a 1.5B model drops such conditions), the model's kind giving way before the text does; an id
        written after a parameter's name binds to it; stats whose `of` finds no number read the asked
        parameter; a listing, stats or count for a question that asks one end (first or last) is that
        end. Each step keeps the model's call unless its own finds lines."""
        call = self._without_field_words(call)
        if self.absent_levels and not call.get("level"):    # a level the store has none of: no line meets it
            call = {**call, "level": list(self.absent_levels)}
            return call, self.tool.surface.run(call)
        if call.get("op") in ("lines", "stats", "count") and which_end(self.question) and "last_minutes" not in call \
                and span_s(self.question) is None and not writes_duration(self.question):
            self._of = call.get("of")     # one end asked: the listing's newest-first order was misread, the
                                          # extremes or the count of every line are not that end's value
            call = {**{k: v for k, v in call.items() if k not in ("of", "limit")}, "op": "first_last"}
        if self.kinds and not any(call.get(k) for k in _CONDITIONS):
            call = {**call, "template": self.kinds[0].id}   # a question about something, asked of every line: its
                                                            # best kind (a count of all lines is rarely meant)
        elif self.kinds and not any(call.get(k) for k in ("template", "text", "where")) and \
                self._names_kind(self.kinds[0]) and self._every_line(call):
            call = {**call, "template": self.kinds[0].id}   # ... of fields every line has ("sshd"): the same
        call = self._kind_with_asked_param(call)
        call = self._valued(call)
        call, result = self._with_tokens(call)
        call, result = self._in_kind_named(call, result)
        bound = self._bound(call)
        if bound is not call and (found := self.tool.surface.run(bound)).get("count") and not found.get("text_relaxed_to"):
            call, result = bound, found
        return self._over_kin(*self._by_a_field_they_have(*self._stats_of_asked(*self._in_kind_asked(call, result))))

    def _by_a_field_they_have(self, call: dict[str, Any], result: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """A top_k by host over lines that write no host (or by component over lines without one) is by the
        other: both say where a line came from, and a log has often one of them only."""
        other = {"host": "component", "component": "host"}.get(str(call.get("by")))
        if call.get("op") != "top_k" or other is None or not result.get("count") or \
                any(str(t.get("value") or "").strip() for t in result.get("top") or []):
            return call, result
        tried = {**call, "by": other}
        found = self.tool.surface.run(tried)
        return (tried, found) if any(str(t.get("value") or "").strip() for t in found.get("top") or []) else (call, result)

    def _stats_of_asked(self, call: dict[str, Any], result: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Stats whose `of` finds no number in the lines, or whose `of` the question does not name (or
        names as a word beside the number, "KB", not a parameter), read the parameter the question asks for
        ("the biggest port ...": <port>; the values after "retries": <retries>, not the <number> after it;
        "how many kb is X free": <free>) of a listed kind, when one has it."""
        if call.get("op") != "stats" or not result.get("count"):
            return call, result
        if self._written(result):
            call, result = self._other_quantity(call, result)
        asked = {w.lower() for w in re.findall(r"\w+", self.question)}
        of = str(call.get("of") or "")
        a_param = any(of in k.params for k in self.kinds)     # else a word the number is read beside ("KB")
        named = [(kind, self._named(kind, call)) for kind in self.kinds]
        # a quantity the question names by its unit beside `of` named as a word without one ("read the
        # broadcast variable in ms": <took>, not <variable>)
        unit_named = any(n and n != of and grounding.a_quantity(k, n) for k, n in named) \
            and not any(grounding.a_quantity(k, of) for k in self.kinds if of in k.params)
        if result.get("n") and of.lower() in asked and not self._written(result) and \
                (a_param and not unit_named or not any(n for _, n in named)):
            return call, result
        for kind, name in named:
            if name and name != call.get("of"):       # that kind's parameter, not the name in another kind
                tried = {**call, "of": name, "template": kind.id}
                if (found := self.tool.surface.run(tried)).get("n") and not self._written(found):
                    return tried, found
        if not of and call.get("template") is None and self._kinds_read(call) > 1:   # no quantity named over
            counted = {k: v for k, v in call.items() if k not in ("want", "of")} | {"op": "count"}   # lines of
            return counted, self.tool.surface.run(counted)     # several kinds: their first numbers are unlike
        return call, result                                    # things; the lines are counted

    def _kinds_read(self, call: dict[str, Any]) -> int:
        """How many kinds of line the call's conditions read (2: two or more)."""
        conds = {k: v for k, v in call.items() if k in _CONDITIONS}
        return len(self.tool.surface.run({"op": "top_k", "by": "template", "k": 2, **conds}).get("top") or [])

    def _written(self, result: Mapping[str, Any]) -> bool:
        """Stats whose every value is a number the question itself writes ("below the limit 0.5 MPa"): the
        parameter is a condition the question gives, not the quantity it asks about."""
        return bool(result.get("n")) and result.get("min") == result.get("max") \
            and _num(result["min"]) in answer_check.figures(self.question)

    def _other_quantity(self, call: dict[str, Any], result: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The same lines' other numeric parameter (of the call's kind, else of a listed kind that has the
        call's `of`) whose values the question does not write, when one has numbers."""
        kind = self._kind_of(call) or next((k for k in self.kinds if call.get("of") in k.params), None)
        for name in [p for p in (kind.params if kind else []) if p != call.get("of")]:
            tried = {**call, "of": name}
            if (found := self.tool.surface.run(tried)).get("n") and not self._written(found):
                return tried, found
        return call, result

    def _named(self, kind: grounding.Kind, call: Mapping[str, Any]) -> str | None:
        """The parameter of `kind` the question asks for; a phrase of words it quotes, and the call's text,
        pick the lines. A Chinese question names it by the English words its terms gloss to (端口: port),
        the words its prompt shows the model."""
        phrases = [p for p in question_phrases(self.question) if len(p.split()) > 1]
        question = " ".join([self.question, *english_terms(self.question)])
        return grounding.named_param(kind, question, self._given(call), phrases, str(call.get("text") or ""),
                                     self.tool.kinds.spread)

    def _given(self, call: dict[str, Any]) -> list[str]:
        """Names of parameters the question gives a value for (the call's `where`, and a word written
        right before a value: "user bob", "task 21.0"): conditions, not what it asks for."""
        return [*(call.get("where") or {}), *(w for tok, w in evidence.words_before(self.question).items()
                                              if not evidence.common(tok) and self._a_value(tok))]

    def _a_value(self, token: str) -> bool:
        """A token of the question that can be a parameter's value: an id, a rare token, a number."""
        return token in self.evidence.ids or token in self.evidence.tokens or any(c.isdigit() for c in token)

    def _every_line(self, call: dict[str, Any]) -> bool:
        """The call's conditions keep every stored line."""
        conds = {k: v for k, v in call.items() if k in _CONDITIONS}
        run = self.tool.surface.run
        return run({**conds, "op": "count"}).get("count") == run({"op": "count"}).get("count")

    def _plain_words(self, text: str) -> bool:
        """A text of words only: none of them an id or a rare token the question names (a condition)."""
        named = {t.lower() for t in [*self.evidence.ids, *self.evidence.tokens]}
        return not any(w.lower() in named or any(c.isdigit() for c in w) for w in text.split())

    def _lines_hold(self, call: dict[str, Any], name: str | None) -> bool:
        """Some of the call's lines (its newest listing) have a parameter called `name`."""
        lines = self.tool.surface.run({**call, "op": "lines"}).get("lines") or []
        ids = [x["id"] for x in lines if isinstance(x, dict) and x.get("id") is not None]
        return bool(name and ids and grounding.param_values(self.tool.surface, name, ids))

    def _valued(self, call: dict[str, Any]) -> dict[str, Any]:
        """A word of the question that the call does not hold and that is the whole value of a parameter of
        the call's kind (or of a listed kind when it names none), and no word of any listed kind's text, is a
        condition on that parameter ("the maximum port for admin": where user = admin; a 1.5B dropped it),
        when the lines with it are found."""
        if call.get("op") not in OPS or "<" in str(call.get("text") or "") or not self.kinds:
            return call
        where = dict(call.get("where") or {})
        held = " ".join([str(call.get("text") or ""), *map(str, where.values()), *(str(call.get(k) or "") for k in
                                                                                     ("host", "component", "level"))]).lower()
        kinds = [k for k in self.kinds if call.get("template") is None or str(k.id) == str(call["template"])]
        literal = {w.lower() for k in self.kinds for w in re.findall(r"[A-Za-z0-9_]+", _SLOT.sub(" ", k.template))}
        letters = re.findall(r"(?<![\w.-])[A-HJ-Z](?![\w.-])", self.question)    # "circuit B" ("I" is a pronoun)
        for tok in [*evidence.candidates(self.question)[:evidence.MAX_TOKENS * 2], *dict.fromkeys(letters)]:
            if tok.lower() in held or tok.lower() in literal or evidence.common(tok):
                continue
            names = [n for t, n in grounding.params_valued(self.tool.surface, tok)
                     if n not in where and n != call.get("of") and any(k.id == t for k in kinds)]
            if names:
                where[names[0]] = tok
        if where == (call.get("where") or {}):
            return call
        tried = {**call, "where": where}
        return tried if self.tool.surface.run({**tried, "op": "count"}).get("count") else call

    def _without_field_words(self, call: dict[str, Any]) -> dict[str, Any]:
        """The call's text without the words of its host or component filter ("3" of host "工位3"): the
        field holds them, and the header's words are no part of a line's message. A host, component or
        text that is the call's level word again is dropped, and a stats' condition on its own `of`."""
        level = str(call.get("level") or "").lower()      # one word the model gave two fields ("Warning"
        if level:                                           # as level and component): it is the level
            call = {k: v for k, v in call.items() if k not in ("host", "component") or str(v).lower() != level}
        if call.get("op") == "stats" and call.get("of") in (call.get("where") or {}):   # a stats of one
            where = {k: v for k, v in call["where"].items() if k != call["of"]}            # value reads none
            call = {k: v for k, v in call.items() if k != "where"} | ({"where": where} if where else {})
        if level and str(call.get("text") or "").lower() == level:      # "warning" as text and level: the level
            call = {k: v for k, v in call.items() if k != "text"}
        names = [str(call[k]) for k in ("host", "component") if call.get(k)]
        text = str(call.get("text") or "")
        if not names or not text or "<" in text or text in question_phrases(self.question):
            return call
        kept = [w for w in text.split() if not evidence.part_of(w, names)]
        out = {k: v for k, v in call.items() if k != "text"}
        return {**out, "text": " ".join(kept)} if kept else out

    def _bound(self, call: dict[str, Any]) -> dict[str, Any]:
        """An identifier or number the question writes right after the name of a parameter of the call's
        kind, or of a listed kind when the call names none ("in stage 23.0", "variable 11"), is that
        parameter's value: a condition on it replaces the bare text, which also matches "task 23.0"."""
        kind = self._kind_of(call)
        if "<" in str(call.get("text") or ""):
            return call
        kinds = [kind] if kind is not None else self.kinds     # no kind chosen: the listed kinds' names
        names = {n.lower(): n for k in kinds for n in k.params}
        where = dict(call.get("where") or {})
        for token, word in evidence.words_before(self.question).items():   # "variable 11": the name makes it one
            if self._a_value(token) and word.lower() in names and names[word.lower()] not in where:
                where[names[word.lower()]] = token
        if where == (call.get("where") or {}):
            return call
        text = " ".join(w for w in str(call.get("text") or "").split() if w not in where.values())
        out = {k: v for k, v in call.items() if k != "text"}
        return {**out, **({"text": text} if text else {}), "where": where}

    def _with_tokens(self, call: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The call's text with the question's rare tokens and ids added, then its ids alone, then as
        written; each with the model's kind of line, then without it (the text is the question's, the
        kind the model's guess: a kind none of whose lines holds the text is dropped, not the text's
        words); then without the words the model added that the question does not hold. The first that
        matches lines without relaxing the text; else the model's call."""
        text = str(call.get("text") or "")
        if "<" in text or call.get("op") not in OPS:
            return call, self.tool.surface.run(call)
        have = {w.lower() for w in text.split()}
        fields = {str(call.get(k) or "").lower() for k in ("level", "host", "component")}   # said by a field
        wanted = [t for t in dict.fromkeys([*self.evidence.tokens, *self.evidence.ids]) if t.lower() not in fields]
        wanted = wanted[:evidence.MAX_TOKENS]
        missing = [t for t in wanted if t.lower() not in have and t.lower() not in text.lower()]
        ids = [t for t in missing if t in self.evidence.ids]
        texts = [" ".join([*extra, text]).strip() for extra in dict.fromkeys((tuple(missing), tuple(ids))) if extra]
        kinds = [True, False] if call.get("template") is not None else [True]
        asked = self.question.lower()       # last: without the words the model wrote that the question does
        own = " ".join(w for w in text.split() if w.lower() in asked)    # not ("svc_backup"), when what is
        conditioned = any(call.get(k) for k in _CONDITIONS if k != "text")   # left still filters
        for t in [*texts, text, *([own] if own != text and (own or conditioned) else [])]:
            for keep in kinds:
                tried = {k: v for k, v in call.items() if (k != "template" or keep) and k != "text"}
                tried = {**tried, "text": t} if t else tried
                result = self.tool.surface.run(tried)
                if result.get("count") and not result.get("text_relaxed_to"):
                    return tried, result
        # last, a `where` whose name the text's lines do not have ("Found block rdd_<rdd>_<number>" has no
        # <block>): its values join the text
        where = {str(v) for v in (call.get("where") or {}).values()}
        for keep in kinds if where else []:
            moved = " ".join([*sorted(v for v in where if v.lower() not in text.lower()), text]).strip()
            tried = {k: v for k, v in call.items() if (k != "template" or keep) and k not in ("text", "where")}
            result = self.tool.surface.run({**tried, "text": moved})
            if result.get("count") and not result.get("text_relaxed_to"):
                return {**tried, "text": moved}, result
        return call, self.tool.surface.run(call)

    def source(self) -> dict[str, Any]:
        out = {"call": self.call or {"text": CALL_PREFIX + self.call_text}, "result": self.result}
        if self.evidence.lines:
            out["evidence"] = {"tokens": self.evidence.tokens, "lines": self.evidence.lines}
        return out

    def check(self, answer: str) -> answer_check.Checked:
        """The answer as the operator sees it: its figures checked against this query (answer_check)."""
        if self.ended:
            answer = alike.ended(answer)
        elif self.timed_out:
            answer = alike.cut_short(answer)
        checked = answer_check.check(answer, self.question, self.result, self.rendered, which_end(self.question),
                                     self._read(), logged=evidence.in_log(self.tool.surface))
        return alike.folded(checked, 1 if self.ran_out or self.timed_out else alike.TIMES)     # no run written a third time


_SLOT = re.compile(r"<[^<>]*>")

LISTED_KEPT = 3               # shorter(): a listing keeps this many lines before the evidence gives any up

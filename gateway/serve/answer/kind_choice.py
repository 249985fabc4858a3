"""Which kind of line a call reads (a mixin of plan.QueryPlan: its question, kinds, evidence, tool and the
_named / _plain_words / _lines_hold readings are the plan's): the question's words choose the kind, the
model's call the conditions. Each repair runs the call it would make and keeps the model's call unless
its own reads lines (or, where the question names a thing and a kind, the lack of any).
"""

from __future__ import annotations

from typing import Any

from gateway.serve.answer import evidence, grounding
from gateway.serve.answer.glossary import english_terms
from gateway.serve.answer.question import near


class KindChoice:
    def _over_kin(self, call: dict[str, Any], result: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """A call over one kind, by parameters other listed kinds (its kin) have too, that the question does
        not single out (none of its words is that kind's alone): the kin kind it does single out, when
        one ("did TID 1354 finish": "Finished task ... (TID <tid>)", not the model's "Running task ...";
        none of its lines may be the answer); else, a count or stats runs over them all, by the words they
        share that the question says ("the failed password lines from A": "... for root ..." and "...
        for invalid user ..." alike), kept when it counts no fewer lines."""
        mine = self._kind_of(call)
        needs = set(call.get("where") or {}) | ({str(call["of"])} if call.get("op") == "stats" and call.get("of") else set())
        if mine is None or call.get("op") not in ("count", "stats", "first_last", "lines") or \
                not needs <= set(mine.params) or "<" in str(call.get("text") or ""):
            return call, result
        kin = [k for k in self.kinds if k is not mine and needs <= set(k.params)]
        said = self._said()

        def own_said(k: grounding.Kind) -> bool:
            own = k.words() - set().union(*(o.words() for o in [mine, *kin] if o is not k))
            return any(near(w, x) for w in own for x in said)
        if not kin or own_said(mine):
            return call, result
        if len(named := [k for k in kin if own_said(k)]) == 1:
            own = mine.words() - set().union(*(o.words() for o in kin))
            text = " ".join(w for w in str(call.get("text") or "").split() if w.lower() not in own)
            other = {**{k: v for k, v in call.items() if k != "text"}, "template": named[0].id, **({"text": text} if text else {})}
            return other, self.tool.surface.run(other)
        shared = [w for w in mine.literal_words() if w.lower() in said and all(w.lower() in k.words() for k in kin) and not evidence.common(w)]
        if named or not shared or call.get("op") not in ("count", "stats") or not result.get("count"):
            return call, result
        text = " ".join(dict.fromkeys([*str(call.get("text") or "").split(), *shared]))
        wide = {**{k: v for k, v in call.items() if k != "template"}, "text": text}
        got = self.tool.surface.run(wide)
        if got.get("count", 0) < result["count"] or got.get("text_relaxed_to") or \
                (call.get("op") == "stats" and got.get("n", 0) < result.get("n", 0)):
            return call, result
        return wide, got

    def _in_kind_asked(self, call: dict[str, Any], result: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """A call whose `where` names parameters but no kind of line reads the first listed kind that has
        those parameters and lines with the values; when none has, the first such kind whose lines hold
        the call's other words, and so no line: the question's words chose the kind, its values the lines,
        and a value only other kinds hold ("TID 1352" started, never finished) is not what was asked.
        Stats whose `of` names a listed kind's parameter read that kind's numbers: other kinds' parameters
        of the same name ("<number>") are other quantities."""
        mine = self._kind_of(call)
        if call.get("op") == "stats" and mine is not None and call.get("of") not in mine.params and \
                any(call.get("of") in k.params for k in self.kinds):   # `of` another listed kind's parameter:
            bare = {k: v for k, v in call.items() if k != "template"}   # that kind's numbers, not the words
            got = self._in_kind_asked(bare, self.tool.surface.run(bare))  # after it in the model's kind
            return got if got[0] is not bare and got[1].get("n") else (call, result)
        where = call.get("where") or {}
        needs = set(where) | ({str(call["of"])} if call.get("op") == "stats" and
                              any(call.get("of") in k.params for k in self.kinds) else set())
        if not needs or call.get("template") is not None or not result.get("count") or "<" in str(call.get("text") or ""):
            return call, result
        ran = []                                # each fitting kind's call and result, run once
        for k in self.kinds:
            if needs <= set(k.params):
                t = {**call, "template": k.id}
                ran.append((t, f := self.tool.surface.run(t)))
                if f.get("count") and not f.get("text_relaxed_to") and (call.get("op") != "stats" or f.get("n")):
                    return t, f
        values = {str(v).lower() for v in where.values()}
        words = " ".join(w for w in str(call.get("text") or "").split() if w.lower() not in values)
        for t, f in ran:
            if result.get("n") and not f.get("n"):      # stats that read numbers keep them over a kind's none
                continue
            bare = {**{x: v for x, v in t.items() if x not in ("where", "text")}, **({"text": words} if words else {})}
            if (seen := self.tool.surface.run(bare)).get("count") and not seen.get("text_relaxed_to"):
                return t, f
        return call, result

    def _kind_of(self, call: dict[str, Any]) -> grounding.Kind | None:
        """The listed kind the call's `template` names, if any."""
        return next((k for k in self.kinds if str(k.id) == str(call.get("template"))), None)

    def _kind_with_asked_param(self, call: dict[str, Any]) -> dict[str, Any]:
        """A lookup's (or a count's) kind of line that lacks the parameter the question asks for ("what
        port did user X come from": Invalid user <user> from <address>) gives way to a listed kind that has
        it (... <user> from <address> port <port>), with the conditions that kind has too, when it has
        lines. A listing of no kind reads such a kind too, with the words of its text that kind writes when
        the whole text holds none of its lines ("executor 连的 driver 地址", text "executor driver": the
        302 lines that send results to the driver, not "Connecting to driver: spark://...@<address>"), or
        without its text when it writes none of them, the text is words only and its own lines lack the
        parameter ("which task did the speculator copy", text "speculations": "We launched 1 speculations"
        has no <task>; "... we are speculating <task>" has)."""
        kind = self._kind_of(call)
        where = dict(call.get("where") or {})
        if call.get("op") not in ("lines", "first_last", "count") or (kind is None and call.get("op") != "lines") or \
                kind is not None and self._named(kind, call):
            return call
        for other in self.kinds:
            if other is kind or not self._named(other, call):
                continue
            moved = {**call, "template": other.id, "where": {k: v for k, v in where.items() if k in other.params}}
            if not moved["where"]:
                del moved["where"]
            texts = [moved]
            if kind is None and call.get("text") and "<" not in str(call["text"]):
                if (kept := [w for w in str(call["text"]).split() if w.lower() in other.words()]):
                    texts.append({**moved, "text": " ".join(kept)})
                elif self._plain_words(str(call["text"])) and not self._lines_hold(call, self._named(other, call)):
                    texts.append({k: v for k, v in moved.items() if k != "text"})
            for tried in texts:     # of no kind: its lines, not those the store's relaxed text finds
                if (r := self.tool.surface.run({**tried, "op": "count"})).get("count") and \
                        (kind is not None or not r.get("text_relaxed_to")):
                    return tried
        return call

    def _in_kind_named(self, call: dict[str, Any], result: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """A call of no kind reads the kind the question's words name. A text that only names a thing (the
        question's rare tokens, no word of a listed kind) reads it in the one listed kind the question names
        ("was oracle ever kicked off for too many authentication failures": text "oracle" counted 18 lines of
        every kind; "Disconnecting: Too many authentication failures" has none of them, and no line there is
        the answer; a listing of none keeps the model's call, whose lines the answer reads). A text of words
        one listed kind writes, of which the question says more ("failed password lines for invalid users":
        text "Failed password", 520 lines of three kinds; "Failed password for invalid user ...", 135), reads
        that kind, kept when it has fewer lines; with an id the question names, whatever it reads ("TID 1354
        跑完了没有", text "finish": "Finished task ... (TID <tid>)" has no 1354), a listing only with lines."""
        text = str(call.get("text") or "").split()
        rare = {t.lower() for t in [*self.evidence.tokens, *self.evidence.ids]}
        if call.get("op") not in ("count", "lines", "first_last", "stats") or call.get("template") is not None or \
                not text or not result.get("count") or "<" in " ".join(text):
            return call, result
        words = {w.lower() for w in text if w.lower() not in rare}
        if not words and call["op"] != "stats":
            if any(w.lower() in k.words() for k in self.kinds for w in text):
                return call, result
            named = [k for k in self.kinds if self._names_kind(k)]
            if len(named) != 1:
                return call, result
            tried = {**call, "template": named[0].id}
            found = self.tool.surface.run(tried)      # a listing of none would hide the thing's lines
            return (tried, found) if found.get("count") or call["op"] != "lines" else (call, result)
        holding = [k for k in self.kinds if words and all(any(near(w, x) for x in k.words()) for w in words)]
        said = self._said()
        if len(holding) != 1 or not {w for w in holding[0].words() if not evidence.common(w)     # it says more
                                     and not any(near(w, t) for t in words) and any(near(w, x) for x in said)}:
            return call, result
        kind = holding[0]           # its words as it writes them ("finish" is no whole token of "Finished")
        ids = [t for t in self.evidence.ids if evidence.is_id(t) and t.lower() not in {w.lower() for w in text}
               and t.lower() not in kind.words()]      # (a Latin word of a Chinese question is no id here)
        kept = [w for w in text if w.lower() in kind.words() or w.lower() in rare] + ids
        tried = {**{k: v for k, v in call.items() if k != "text"}, "template": kind.id, **({"text": " ".join(kept)} if kept else {})}
        found = self.tool.surface.run(tried)
        if ids:                                            # the thing asked of, in that kind: its lines or none
            return (call, result) if found.get("text_relaxed_to") or (call["op"] == "stats" and not found.get("n")) \
                or (call["op"] == "lines" and not found.get("count")) else (tried, found)
        if not found.get("count") or found.get("text_relaxed_to") or found["count"] >= result["count"] or \
                (call["op"] == "stats" and not found.get("n")):
            return call, result
        return tried, found

    def _names_kind(self, kind: grounding.Kind) -> bool:
        """The question writes two or more of the kind's own words ("a POSSIBLE BREAK-IN ATTEMPT"): it is
        about that kind of line."""
        return len({w for w in kind.words() & self._said() if not evidence.common(w)}) >= 2

    def _said(self) -> set[str]:
        """The question's words (lower case), a Chinese one's by the English its glossary terms give."""
        return grounding.words_of(self.question) | set(english_terms(self.question))

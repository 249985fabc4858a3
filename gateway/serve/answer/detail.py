"""What a query's result adds to the answer's prompt beyond its own sentence (QueryPlan, plan.py, runs them
after the call): a count's total of the parameter the question names, the lines of a few, how its lines
split by field and kind; a partial listing's extremes over every matched line; which lines hold them.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any, Mapping

from gateway.pipeline.fields import number_of
from gateway.pipeline.query import QueryError, QueryInterrupted
from gateway.serve.answer import grounding
from gateway.serve.answer.render import _num, message_of, render_result, shown_avg


class ResultDetail:
    """QueryPlan's result details (a mixin: its call, result, kinds, tool, the _summed ids and the _tops read
    are the plan's)."""

    def _listing_figures(self) -> str:
        """A listing that shows some of its matched lines, read for one numeric parameter (captured): that
        parameter's smallest and largest over every matched line. The shown lines' own largest is not the
        lines' largest (a 1.5B model answered "the maximum port" with the largest of the ten shown)."""
        call = self.call or {}
        names = {k for x in self.result.get("lines") or [] if isinstance(x, dict) for k in (x.get("captured") or {})}
        if call.get("op") != "lines" or not self.result.get("truncated") or len(names) != 1:
            return ""
        name = names.pop()
        st = self.tool.surface.run({**{k: v for k, v in call.items() if k != "limit"}, "op": "stats", "of": name})
        if (st.get("n") or 0) < 2 or st.get("min") == st.get("max"):
            return ""
        self.result["listed_stats"] = {k: st.get(k) for k in ("of_param", "n", "min", "max")}
        return (f" Over all {st['n']} matched lines with a {name}: minimum {_num(st['min'])}, maximum {_num(st['max'])}."
                + self._extremes_of(name, st, numbers=True))     # which lines: "the slowest variable" names its line

    def _count_detail(self) -> str:
        """What a count adds for the answer: the sum, min and max over the counted lines of a numeric
        parameter of its kind that the question names by its name or by the word after it in the kind
        ("how many bytes": <size> bytes); and the lines themselves when few ("how many bytes did task X
        send" is read off the line)."""
        assert self.call is not None
        out, st, name, kind = "", {}, None, None
        mine = self._kind_of(self.call)
        for kind in [mine] if mine is not None else self.kinds:     # no kind in the call: a listed one's
            name = self._named(kind, self.call)
            st = self.tool.surface.run({**self.call, "op": "stats", "of": name}) if name else {}
            if st.get("of_param") != name:     # not its values: the number after a word of the name in the
                st = {}                        # line ("-41" of "Address change ... msra-sa-41/10.1.2.3:9000")
            if st.get("n"):
                break
        unit = grounding.unit_of(kind, name, occurrences=True) if kind is not None and name else None
        if st.get("n", 0) > 1:   # the lines summed: quoted one by one they read as the answer
            summed = self.tool.surface.run({**self.call, "op": "lines", "limit": SUMMED_SHOWN_OUT})
            self._summed = {x.get("id") for x in summed.get("lines") or []}
        if st.get("n"):
            self.result["param_stats"] = {k: st.get(k) for k in ("of_param", "n", "sum", "min", "max", "avg")}
            if unit:
                self.result["param_stats"]["unit"] = unit          # a quantity: its total is an answer
            out = self._param_figures(name, unit, st)

        if self.result["count"] <= FEW_LINES and st.get("n", 0) <= 1:   # several values: one line's is no answer
            few = self.tool.surface.run({**self.call, "op": "lines", "limit": FEW_LINES})
            self.result["lines"] = few.get("lines") or []
            # the lines alone: what the count matched on (a relaxed text) the count's own sentence said
            listing = render_result({k: v for k, v in few.items() if k != "text_relaxed_to"})
            out += " " + listing.split("\n", 1)[-1].join(["They are:\n", "\n"])   # what follows: its own line
        return out

    def _split(self) -> str:
        """A count of every line (no condition at all) is rarely what a question means: how the lines split
        by component, host and level (the top few of each field with more than one value) goes with it."""
        assert self.call is not None
        if any(self.call.get(k) for k in _CONDITIONS):
            return self._most()
        parts, split = [], {}
        for by in ("component", "host", "level"):
            top = [t for t in self.tool.surface.run({"op": "top_k", "by": by, "k": SPLIT_TOP}).get("top") or []
                   if str(t.get("value") or "").strip()]
            if len(top) > 1:
                split[by] = top
                parts.append(f"by {by} " + ", ".join(f"{t['value']} {t.get('count', t.get('lines'))}" for t in top))
        if not parts:
            return ""
        self.result["split"] = split
        return " The most lines " + "; ".join(parts) + "."

    def _most(self) -> str:
        """A filtered count's lines by host and by component, the top one of each field that has more
        than one among them ("how many jams, and which machine had the most"); a text filter's by kind
        of line too (its words are in lines of several kinds: "rdd_2" in "Found block rdd_2_0 locally"
        and in "Partition rdd_2_0 not found"). Said beside the count, not an answer's figure of its own:
        the check still asks for the count (an answer on a top count alone stood in for it)."""
        conds = {k: v for k, v in self.call.items() if k in _CONDITIONS} if self.call else {}
        parts = []
        for by in ("host", "component"):
            if conds.get(by):
                continue
            top = [t for t in self.tool.surface.run({"op": "top_k", "by": by, "k": 2, **conds}).get("top") or []
                   if str(t.get("value") or "").strip()]
            if len(top) > 1:
                parts.append(f"{by} {top[0]['value']} ({top[0].get('count', top[0].get('lines'))} of them)")
                self.result.setdefault("most", {})[by] = top[0]
        most = " Most of them by " + "; by ".join(parts) + "." if parts else ""
        return most + (self._kinds_counted(conds) if conds.get("text") and conds.get("template") is None else "") \
            + self._by_param(conds)

    def _by_param(self, conds: Mapping[str, Any]) -> str:
        """A filtered count's lines by the values of their kinds' parameters that name things (not
        numbers: a port or a size is a measure, for stats): the most frequent values of the parameters
        most lines have, each with its count of the lines that have the parameter. What "which address
        failed most" or "which users were disconnected" reads off a count (it is said beside the count
        as its kinds are; the check cites the count after a reading of them)."""
        tops_of = getattr(self.tool.surface, "param_tops", None)   # none: a surface without named parameters
        if self.result.get("param_stats") or tops_of is None:      # (the fleet node's); or the question named
            return ""                                               # the parameter it asks of the lines
        relaxed = self.result.get("text_relaxed_to")      # the words the count matched on
        asked = {**conds, **({"text": relaxed} if relaxed else {})}
        key = repr(sorted(asked.items()))
        if key not in self._tops:                          # read once per call: shorter() renders again
            try:
                self._tops[key] = tops_of(asked, BY_PARAM_VALUES)
            except (QueryError, QueryInterrupted, sqlite3.DatabaseError):
                self._tops[key] = {}
        tops = self._tops[key]
        fixed = {str(v).lower() for v in (conds.get("where") or {}).values()} if isinstance(conds.get("where"), Mapping) else set()
        fixed |= {w.lower() for w in str(conds.get("text") or "").split()}      # the call's own conditions
        said = []
        for name, got in tops.items():
            top = got["top"]
            if got["numeric"] or (got["values"] == 1 and str(top[0]["value"]).lower() in fixed) or top[0]["count"] < 2:
                continue        # a measure, the call's own condition, or every value once (few: the lines show them)
            self.result.setdefault("by_param", {})[name] = top
            self.result.setdefault("most", {})[name] = top[0]      # the plain answer says it too
            rest = got["values"] - len(top)
            said.append(f"by {name} (in {got['lines']} lines): " + ", ".join(f"{t['value']} ({t['count']})" for t in top)
                        + (f", and {rest} other values" if rest > 0 else ""))
            if len(said) == BY_PARAMS_SHOWN:
                break
        return f" Among them {'; '.join(said)}." if said else ""

    def _kinds_counted(self, conds: Mapping[str, Any]) -> str:
        """The kinds of line a text filter counted, the most frequent KINDS_LISTED with their counts; a
        kind of one line among them shown by that line. What was counted, said: a question that asks
        which account logged in, counted over "password", finds the one "Accepted password for ..."
        among hundreds of failures; "which user" of a process's 18 lines, its one "Disconnecting ...
        for admin" line (an answer that reads them states no count: check cites it)."""
        got = self.tool.surface.run({"op": "top_k", "by": "template", "k": KINDS_LISTED, **conds})
        top = [t for t in got.get("top") or [] if str(t.get("value") or "").strip()]
        if len(top) < 2:
            return ""
        self.result.setdefault("most", {})["template"] = top[0]
        said, lines = [], []
        for t in top:
            line = self._one_line(conds, str(t["value"])) if t.get("count") == 1 else None
            if line is not None:
                lines.append(line)
                said.append(f'the line "{message_of(line, KIND_LINE_SHOWN) or str(line.get("text", ""))[:KIND_LINE_SHOWN]}" (1)')
            else:
                said.append(f'"{t["value"]}" ({t.get("count")})')
        rest = int(got.get("count") or 0) - sum(int(t.get("count") or 0) for t in top)
        if lines:
            self.result["kind_lines"] = lines
        more = f", and {rest} lines of other kinds" if rest > 0 else ""
        return f" By kind of message: {', '.join(said)}{more}."

    def _one_line(self, conds: Mapping[str, Any], template: str) -> dict[str, Any] | None:
        """The line of a kind (its template's text) that conds matched once."""
        rows, _ = self.tool.surface.execute("SELECT id FROM templates WHERE template = ? LIMIT 2", [template])
        if len(rows) != 1:
            return None
        got = self.tool.surface.run({**conds, "op": "lines", "template": rows[0][0], "limit": 1}).get("lines") or []
        return got[0] if got and isinstance(got[0], dict) else None

    def _param_figures(self, name: str, unit: str | None, st: Mapping[str, Any]) -> str:
        """A quantity (a number the kind writes a unit after: "<size> bytes") adds up: its total first.
        A number without a unit (a port, a task) is an id: its values first (their sum, read as the
        answer to "what port", last)."""
        if st["n"] == 1:          # as its line writes it ("24.0", not 24)
            lines = self.tool.surface.run({**(self.call or {}), "op": "lines", "limit": FEW_LINES}).get("lines") or []
            got = grounding.param_values(self.tool.surface, name, [x["id"] for x in lines if x.get("id") is not None])
            one = next((v for v in got.values() if number_of(v) == st["sum"]), _num(st["sum"]))
            return f" The one {name} value among them: {one}{f' {unit}' if unit else ''}."
        got = grounding.param_values(self.tool.surface, name, sorted(i for i in self._summed if i is not None))
        values = list(dict.fromkeys(got.values()))
        if unit:       # a few values said one by one too: one of them may be what is asked of a thing
            if len(got) == st["n"] <= PARAM_VALUES_SHOWN:   # each line's, when every line's was read: they add up
                values = list(got.values())
            few = len(values) <= PARAM_VALUES_SHOWN and all(number_of(v) is not None for v in values)
            if few:
                self.result["param_stats"].update(values=values, unit=unit)
            each = f": {', '.join(f'{v} {unit}' for v in values)}" if few else ""
            return (f" Their {name} values add up to {_num(st['sum'])} {unit} in all ({st['n']} values{each}; "
                    f"minimum {_num(st['min'])}, maximum {_num(st['max'])}, average {shown_avg(st)})."
                    + self._extremes_of(name, st))
        more = f" and {len(values) - PARAM_VALUES_SHOWN} more" if len(values) > PARAM_VALUES_SHOWN else ""
        listed = f" Their {name} values: {', '.join(values[:PARAM_VALUES_SHOWN])}{more}"
        if not all(number_of(v) is not None for v in values):   # names with a few numbers among them (users):
            self.result["param_stats"] = {"of_param": name, "values": values[:PARAM_VALUES_SHOWN]}  # no sum
            return listed + "."
        self.result["param_stats"]["values"] = values[:PARAM_VALUES_SHOWN]
        return (f"{listed} (minimum {_num(st['min'])}, maximum {_num(st['max'])}; over the {st['n']} lines they "
                f"sum to {_num(st['sum'])})." + self._extremes_of(name, st))

    def _extremes_of(self, name: str, st: Mapping[str, Any], numbers: bool = False) -> str:
        """Which lines hold a quantity's minimum and maximum, by their other parameters ("block rdd_21_0"):
        what "which partition has the most free" asks for. Not their text: quoted, a 1.5B model read one
        line's number as the total. `numbers`: bare numbers name a line too (a listing shows them anyway)."""
        kind = next((k for k in self.kinds if name in k.params), None)
        ends = [(end, st[key], st.get(f"{key}_line") or {}) for end, key in (("minimum", "min"), ("maximum", "max"))]
        if kind is None or st.get("min") == st.get("max") or not all(x.get("id") is not None for _, _, x in ends):
            return ""
        ids = [x["id"] for _, _, x in ends]
        others = {p: {i: v for i, v in grounding.param_values(self.tool.surface, p, ids).items() if numbers or _AN_ID.search(v)}
                  for p in kind.params if p != name}     # ids (letters and digits): a bare number reads as the answer
        said = [f"the {end} ({_num(value)}) is on the line with "
                + ", ".join(f"{p} {got[x['id']]}" for p, got in others.items() if x["id"] in got)
                for end, value, x in ends if any(x["id"] in got for got in others.values())]
        if said and isinstance(self.result.get("param_stats"), dict):    # an answer may name a line by them
            self.result["param_stats"]["at"] = list(dict.fromkeys(
                v for got in others.values() for i in ids if (v := got.get(i)) is not None))
        return f" Of these, {'; '.join(said)}." if said else ""


_AN_ID = re.compile(r"[A-Za-z][^\s]*\d|\d[^\s]*[A-Za-z]")
FEW_LINES = 3                 # a count of at most this many lines shows them to the answer
SUMMED_SHOWN_OUT = 200        # the counted lines kept out of the evidence shown beside a total
KINDS_LISTED = 5              # a text filter's count: its most frequent kinds of line said with it
KIND_LINE_SHOWN = 120         # ... a kind of one line by its message, clipped to this many characters
SPLIT_TOP = 3                 # a count of every line: the top values of each field said with it
BY_PARAM_VALUES = 2           # a filtered count's lines by parameter: each one's most frequent values said
BY_PARAMS_SHOWN = 3           # ... of this many parameters at most (those most lines have)
PARAM_VALUES_SHOWN = 8        # a count's values of an asked id-like parameter listed for the answer
_CONDITIONS = ("text", "template", "where", "host", "component", "level", "since", "until", "last_minutes", "box")

"""The answer checked against its query before the operator sees it (issue 23: every figure in an
answer comes from a call).

A 1.5B model restating a result still rewrites figures: "06:55:48" becomes "6:55:48", "23:37:46"
becomes "11:37:46", a log without a year gets one invented, a count is rounded. And a Chinese answer
paraphrases the message it should cite. So, after the answer is written and before it is shown:

- every figure in it (a run of digits, with : . - / between digits) must be one the question or the
  query's result holds; list numbering ("2." at an item) is allowed, and so is a figure inside a long
  token that the stored log holds whole (an address or an id the model read in the stream);
- the figure the question asked for must be in it: the count, the asked end's time, an extreme (the one
  a stats call's `want` names);
- an answer that fails either is replaced by the result said plainly in the question's language
  (plain_answer), except an answer that states no figure about a count whose every line it was shown:
  that is its reading of them (a yes or a no), and the count is cited after it;
- a top-k answer that does not name the store's top values (as many as the call asked for) gets them
  cited after it;
- a count over a text no line holds whole (matched on its first words) is noted as such after an
  answer that states it.

Pure functions; gateway.serve.engine_thread applies check() to query answers.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from gateway.serve.answer import evidence
from gateway.serve.answer.question import WHEN, han_number
from gateway.serve.answer.render import (FEW_QUOTED, _LABEL, _PLAIN_NUMBER, _num, _shown_time, asked_stat, plain_answer,
                                         shown_avg)
from gateway.serve.prompts import is_chinese

FIGURE = re.compile(r"\d+(?:[:.\-/]\d+)*")
_STATED = re.compile(r"(?<![A-Za-z_\d])\d+(?:[:.\-/]\d+)*")    # a figure said on its own, not inside an id
_ENUMERATOR = re.compile(r"\s*(?:[.、)）:：]|\s*[-–])")   # after "2" in "2. ...", "2、...", "2) ..."
MAX_ENUMERATOR = 20
_SEPARATORS = re.compile(r"[:.\-/]")
_SPACE = re.compile(r"\s+")
_WORDS = re.compile(r"[A-Za-z0-9]+")
_PLACEHOLDER = re.compile(r"<[A-Z*]{0,8}>|<\*>")
_HAN_NUMBER = "一二三四五六七八九十"
# A token this long holding a digit names something (an address, an id, a path), not a quantity: the
# stored log holding it whole supports its figures. ASCII only, so that CJK text does not join it.
_LONG_TOKEN = re.compile(r"[A-Za-z0-9_.:/\-]*\d[A-Za-z0-9_.:/\-]*")
MIN_TOKEN_CHARS = 8
MAX_TOKENS_LOOKED_UP = 4



@dataclass
class Checked:
    text: str                                  # what the operator is shown
    action: str = "kept"                       # kept | replaced | cited | corrected | noted (all lines; ...)
    unsupported: list[str] = field(default_factory=list)   # figures no source holds
    missing: list[str] = field(default_factory=list)       # asked-for figures or values left out

    def summary(self) -> dict[str, Any]:
        return {"action": self.action, "unsupported": self.unsupported, "missing": self.missing}


def figures(text: str) -> list[str]:
    return FIGURE.findall(text)


def _with_prefixes(found: list[str]) -> set[str]:
    """Each figure and its leading parts up to a separator ("16:47:20" -> "16", "16:47"): a shorter
    form of a time or a date is the same figure, not an invented one."""
    out = set()
    for f in found:
        out.add(f)
        for m in _SEPARATORS.finditer(f):
            out.add(f[: m.start()])
    return out


def supported_figures(*sources: str) -> set[str]:
    """The figures of the sources, their leading parts, and their parts ("2005-07-20" gives "20": the
    date said in words, "July 20, 2005", keeps every figure; "6:55:48" for "06:55:48" does not)."""
    found = [f for s in sources for f in figures(s)]
    return _with_prefixes(found) | {p for f in found for p in _SEPARATORS.split(f)}


def unsupported_figures(answer: str, allowed: set[str]) -> list[str]:
    """The figures in the answer that are not in `allowed`, list numbering excepted."""
    bad = []
    for m in FIGURE.finditer(answer):
        f = m.group()
        if f in allowed:
            continue
        if f.isdigit() and int(f) <= MAX_ENUMERATOR and _ENUMERATOR.match(answer, m.end()) \
                and not answer[m.end():m.end() + 2].lstrip(".").startswith(tuple("0123456789")):
            continue
        bad.append(f)
    return list(dict.fromkeys(bad))


# a unit's spellings -> one name: "809.3 bytes" for the line's "809.3 KB" is another quantity
_UNIT = {**{u: "b" for u in ("b", "byte", "bytes")}, **{u: "kb" for u in ("kb", "kib", "kilobyte", "kilobytes")},
         **{u: "mb" for u in ("mb", "mib", "megabyte", "megabytes")}, **{u: "gb" for u in ("gb", "gib", "gigabyte", "gigabytes")},
         **{u: "ms" for u in ("ms", "millisecond", "milliseconds")}, **{u: "s" for u in ("s", "sec", "secs", "second", "seconds")},
         **{u: "min" for u in ("min", "mins", "minute", "minutes")}, **{u: "h" for u in ("h", "hour", "hours")},
         "%": "%", "percent": "%", "字节": "b", "毫秒": "ms", "秒": "s", "分钟": "min", "小时": "h"}
_WITH_UNIT = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(%|[A-Za-z]+|字节|毫秒|秒|分钟|小时)")


def wrong_units(answer: str, sources: str) -> list[str]:
    """Figures the answer writes with a unit (kb, bytes, ms, s, % ...) that the sources write the same
    figure with only under another unit."""
    written: dict[str, set[str]] = {}
    for m in _WITH_UNIT.finditer(sources):
        if (u := _UNIT.get(m.group(2).lower())) is not None:
            written.setdefault(m.group(1), set()).add(u)
    return list(dict.fromkeys(m.group(0) for m in _WITH_UNIT.finditer(answer)
                              if (u := _UNIT.get(m.group(2).lower())) is not None and m.group(1) in written
                              and u not in written[m.group(1)]))


def _time_figure(line: Mapping[str, Any]) -> list[str]:
    """The figure of a line's time an answer must give: its time of day (to the minute at least) when it
    has one."""
    found = figures(str(_shown_time(line)))
    clock = [f for f in found if ":" in f][-1:]
    return clock + [clock[0].rsplit(":", 1)[0]] if clock and clock[0].count(":") == 2 else clock or found[-1:]


def _norm(s: str) -> str:
    return _SPACE.sub(" ", s).strip().lower()


def asked_figures(result: Mapping[str, Any], question: str, end: str | None) -> list[list[str]]:
    """What the answer must hold, as alternatives: each inner list needs one of its values."""
    num = _num
    if result.get("no_match") and result.get("without_text"):   # none with the text: the answer says what
        return [[str(result["without_text"]["count"])]]          # the rest matches (or is replaced by it)
    if result.get("error") or result.get("no_match"):
        return []
    op = str((result.get("call") or {}).get("op"))
    if op == "count":      # or the asked parameter's total / extreme / average over the counted lines
        st = result.get("param_stats") or {}
        return [[str(result.get("count", 0)), *(num(st[k]) for k in ("sum", "max", "min", "avg") if st.get(k) is not None),
                 *([shown_avg(st)] if st.get("avg") is not None else []),
                 *(str(v) for v in st.get("values") or []), *(str(v) for v in st.get("at") or []),
                 *(str(t.get("count", t.get("lines"))) for top in (result.get("split") or {}).values() for t in top)]]
    if op == "first_last":
        # the time when the question asks when (a pattern's captured value is not when it appeared),
        # else the captured value a pattern asked for
        ends = [result[e] for e in ([end] if end in ("first", "last") else ["first", "last"])
                if isinstance(result.get(e), dict)]
        if WHEN.search(question):
            return [_time_figure(line) for line in ends]
        return [[str(v) for v in line["captured"].values()] for line in ends if line.get("captured")]
    if op == "stats" and result.get("n") and (asked := asked_stat(result)) is not None:   # the call's `want`
        return [list(dict.fromkeys([asked[1], num(result[asked[0]])]))]
    if op == "stats" and result.get("n"):
        return [[*(num(result[k]) for k in ("max", "min", "avg", "sum") if result.get(k) is not None), shown_avg(result)]]
    if op == "lines":      # the asked parameter's value read off the lines ("port 49811", not the address)
        captured = [str(v) for x in result.get("lines") or [] if isinstance(x, dict)
                    for v in (x.get("captured") or {}).values()]
        ends = [num(v) for k in ("min", "max") if (v := (result.get("listed_stats") or {}).get(k)) is not None]
        return [list(dict.fromkeys(captured + ends))] if captured else []
    return []


def _reads_asked_extreme(answer: str, result: Mapping[str, Any], question: str) -> bool:
    """A stats answer that reads the line of the extreme its call asked for ("which partition has the
    least": the partition named on the minimum's line) without its figure: the figure is cited after it."""
    asked = asked_stat(result) if str((result.get("call") or {}).get("op")) == "stats" else None
    line = result.get(f"{asked[0]}_line") if asked is not None else None
    return isinstance(line, dict) and evidence.quoted(answer, evidence.Evidence([], [dict(line)]), question)


def _quote_lines(ev: evidence.Evidence, question: str) -> str:
    head = "含有这些标识的日志行：" if is_chinese(question) else "Lines that hold what the question names:"
    return head + "\n- " + ev.lines[0]["text"]          # the best line (more would read as a loop)


def _top_asked(result: Mapping[str, Any], question: str) -> list[Mapping[str, Any]]:
    """The top values the answer must name: as many as the question asks for ("top 3", "前 3 个",
    "前三"), else the first (a k the model chose itself is not asked for)."""
    k = (result.get("call") or {}).get("k")
    asked = isinstance(k, int) and 1 < k <= 10 and bool(
        re.search(rf"(?<!\d){k}(?!\d)|[前第]{_HAN_NUMBER[k - 1]}", question))
    return list(result.get("top") or [])[: k if asked else 1]


def _words(text: str) -> str:
    """Letters and digits only, placeholders out: "<IP>:Got exception" ~ "Got exception"."""
    return " ".join(w for w in _WORDS.findall(_PLACEHOLDER.sub(" ", text))).lower()


def _unnamed(answer: str, result: Mapping[str, Any], question: str) -> list[str]:
    said = _words(answer)
    return [str(t["value"]) for t in _top_asked(result, question) if _words(str(t["value"])) not in said]


def citation(result: Mapping[str, Any], question: str) -> str:
    top = _top_asked(result, question)
    label, label_zh = _LABEL.get(str(result.get("by")), ("value", "值"))
    counted = [(t["value"], t.get("count", t.get("lines"))) for t in top]
    if is_chinese(question):
        return "\n（存储中最常见的" + label_zh + "：" + "；".join(f"“{v}”，{c} 行" for v, c in counted) + "。）"
    return (f"\n(The store's most frequent {label}{'s' if len(top) > 1 else ''}: "
            + "; ".join(f'"{v}", {c} lines' for v, c in counted) + ".)")


def _logged_tokens_out(answer: str, allowed: set[str], logged: Callable[[str], bool]) -> str:
    """The answer with its long tokens that hold an unsupported figure and that the stored log holds
    whole blanked out (at most MAX_TOKENS_LOOKED_UP looked up)."""
    looked = 0
    for m in reversed(list(_LONG_TOKEN.finditer(answer))):
        tok = m.group().rstrip(".:/-")
        if len(tok) < MIN_TOKEN_CHARS or not unsupported_figures(tok, allowed):
            continue
        if looked == MAX_TOKENS_LOOKED_UP:
            break
        looked += 1
        if logged(tok):
            answer = answer[:m.start()] + " " * len(tok) + answer[m.start() + len(tok):]
    return answer


def _read_every_line(result: Mapping[str, Any], said: set[str]) -> bool:
    """A count whose every line the answer's prompt showed, or whose kinds it listed with lines among
    them (detail._kinds_counted), or its lines by parameter value (detail._by_param), answered without a
    figure beyond the question's (`said`: the others): the answer is the model's reading of those lines
    ("which account logged in": the one line of its kind), the count cited after it."""
    lines = result.get("lines") or []
    if str((result.get("call") or {}).get("op")) != "count" or said or not isinstance(result.get("count"), int):
        return False
    return (bool(lines) and 0 < result["count"] <= len(lines)) or bool(result.get("kind_lines")) \
        or bool(result.get("by_param"))


def check(answer: str, question: str, result: Mapping[str, Any], rendered: str, end: str | None,
          ev: evidence.Evidence | None = None, logged: Callable[[str], bool] | None = None) -> Checked:
    """The answer as shown: kept, cited, or replaced by plain_answer (see the module's doc).
    `rendered` is the result as the answer's prompt gave it (render.render_result). `ev`: the lines the
    question's rare tokens point at; an answer that quotes one of them reads the line (a lookup) and keeps
    it without the query's figure, which is added after it. `logged(token)`: whether the stored log holds
    the token whole (None: only the question and the result support figures)."""
    as_json = json.dumps(result, ensure_ascii=False)
    allowed = supported_figures(question, rendered, as_json)
    own = unsupported_figures(answer, allowed)
    if own and logged is not None:
        own = unsupported_figures(_logged_tokens_out(answer, allowed, logged), allowed)
    bad = own + wrong_units(answer, "\n".join(
        [question, rendered, as_json, *(x["text"] for x in (ev.lines if ev else []))]))
    said = _with_prefixes(_STATED.findall(answer))      # "2" of "vcs2" does not say the count 2
    asked = asked_figures(result, question, end)
    missing = list(dict.fromkeys(
        alts[0] for alts in asked
        if alts and not any(a in said or (not FIGURE.fullmatch(a) and _norm(a) in _norm(answer)) for a in alts)))
    reads = ev is not None and bool(ev.lines) and evidence.quoted(answer, ev, question) or \
        _reads_asked_extreme(answer, result, question)
    # a reading of a count's kinds may say the figures of its kinds' lines (an address), not their times
    shown = [str(x.get("text", "")).replace(str(x.get("time_text") or "\0"), " ")
             for x in result.get("kind_lines") or [] if isinstance(x, dict)]
    shown += [str(t["value"]) for top in (result.get("by_param") or {}).values() for t in top]   # not counts
    if missing and not bad and (reads or _read_every_line(result, said - supported_figures(question, *shown))):
        return Checked(answer.rstrip() + "\n" + plain_answer(result, question, end, answer), "cited", [],
                       missing)
    if bad or missing or not answer.strip():
        plain = plain_answer(result, question, end)
        shown = {x.get("id") for x in result.get("lines") or [] if isinstance(x, dict)}
        if ev is not None and ev.lines and ev.lines[0].get("id") not in shown:
            plain += "\n" + _quote_lines(ev, question)         # the fallback quotes the line, never a bare count
        return Checked(plain, "replaced", bad, missing)
    op = str((result.get("call") or {}).get("op"))
    unnamed = _unnamed(answer, result, question) if op == "top_k" and not result.get("error") else []
    if unnamed:
        return Checked(answer.rstrip() + citation(result, question), "cited", [], unnamed)
    if op == "count" and _han_count(answer, result, said):
        return Checked(answer.rstrip() + "\n" + plain_answer(result, question, end, answer), "cited")
    wrong = _misstatements(answer, result)
    if wrong:
        return Checked(corrected(answer, result, wrong), "corrected", [],
                       list(dict.fromkeys(answer[a:b] for _, a, b in wrong)))
    others = _other_values(answer, result, question)
    if others:
        return Checked(answer.rstrip() + others, "cited", [], [])
    if op == "count" and result.get("count") and result.get("count") == result.get("of_all"):
        return Checked(answer.rstrip() + "\n" + _every_line(result, question), "noted")
    if result.get("text_relaxed_to") and str(result.get("count")) in said:
        return Checked(answer.rstrip() + "\n" + _relaxed(result, question), "noted")
    # a count of a few lines that the question's rare tokens point at is a lookup too ("What is the status
    # of the user cheng?" counted cheng's 3 lines): the answer that reads none of them gets one cited
    few = op == "count" and 0 < int(result.get("count") or 0) <= FEW_QUOTED and ev is not None and bool(ev.lines)
    read = None if asked and not few else _unread_line(answer, question, result, end, ev)
    if read is not None:
        return Checked(answer.rstrip() + "\n" + _quote_line(read, question, counted=few), "cited")
    return Checked(answer)


MAX_READ_LINES = 3        # a listing this short is the lines a lookup reads


_HAN_COUNTED = re.compile(r"([一二两三四五六七八九十]{1,3})\s*(?:条|行|次|个|台|项|种|位|笔)")


def _han_count(answer: str, result: Mapping[str, Any], said: set[str]) -> bool:
    """A count said only in Han numerals ("有两条记录"): right for a reader, but not a figure a script or a
    search finds; the store's count is cited after it in digits."""
    n = result.get("count")
    return bool(n) and str(n) not in said and n in {han_number(m) for m in _HAN_COUNTED.findall(answer)}


def _unread_line(answer: str, question: str, result: Mapping[str, Any], end: str | None,
                 ev: evidence.Evidence | None) -> Mapping[str, Any] | None:
    """A lookup (no figure asked of its result: the caller checks asked_figures) whose answer reads no line
    it was shown: the line to cite after it: of the lines the question's rare tokens point at, a short
    listing's and the asked end, the one sharing the most tokens with the answer (the first on a tie). A
    1.5B model paraphrased "Invalid user postgres from ..." as "postgres logged in from ..."; the operator
    gets the line it answered from. None when the answer writes a span of one of them."""
    op = str((result.get("call") or {}).get("op"))
    if result.get("error") or op in ("top_k", "buckets"):
        return None
    listed = [x for x in result.get("lines") or [] if isinstance(x, dict)]
    shown = [*(ev.lines if ev is not None else []),
             *(listed[:MAX_READ_LINES] if op == "lines" and 0 < int(result.get("count") or 0) <= MAX_READ_LINES else []),
             *([result[end]] if op == "first_last" and end in ("first", "last") and isinstance(result.get(end), dict) else [])]
    if not shown or any(evidence.holds_span(answer, x, question) for x in [*shown, *listed[:MAX_READ_LINES]]):
        return None
    said = {w.lower() for w in evidence.tokens(answer)}
    return max(shown, key=lambda x: len(said & {w.lower() for w in evidence.tokens(str(x.get("text", "")))}))


def _quote_line(line: Mapping[str, Any], question: str, counted: bool = False) -> str:
    if counted:
        head = "计数的行之一：" if is_chinese(question) else "One of the lines counted:"
    else:
        head = "回答依据的日志行：" if is_chinese(question) else "The line this answer reads:"
    return f"{head}\n- {line['text']}"


def _relaxed(result: Mapping[str, Any], question: str) -> str:
    """A count over a text relaxed to its first words (query.py) is not a count of the words asked: an
    answer stating it is followed by what the lines hold and what none of them holds."""
    asked, got = (result.get("call") or {}).get("text"), result["text_relaxed_to"]
    if is_chinese(question):
        return f"（注意：没有一行同时含有“{asked}”；这 {result['count']} 行只含“{got}”。）"
    return f'(Note: no line holds all of "{asked}"; these {result["count"]} lines hold "{got}" only.)'


def asked_values(result: Mapping[str, Any]) -> tuple[str, list[str]]:
    """The asked parameter's distinct values the result holds: a count's (param_stats) or those captured
    from a listing's lines; with the unit its kind writes after them ("2128 bytes")."""
    st = result.get("param_stats") or {}
    if st.get("values"):
        unit = f" {st['unit']}" if st.get("unit") else ""
        return str(st.get("of_param") or "value"), [f"{v}{unit}" for v in st["values"]]
    got = [x["captured"] for x in result.get("lines") or [] if isinstance(x, dict) and x.get("captured")]
    names = {k for g in got for k in g}
    if len(names) != 1:
        return "", []
    name = names.pop()
    return name, list(dict.fromkeys(str(g[name]) for g in got))


def _other_values(answer: str, result: Mapping[str, Any], question: str) -> str:
    """An answer that names one of several values the result holds for the asked parameter ("task 3.0
    finished in stage 2.0" when it finished in four stages), or only their total ("task 21.0 sent 9406
    bytes" over four lines), gets every value cited after it: the one it picked is no more the answer
    than the others, and a total does not say it adds several up."""
    name, values = asked_values(result)
    if len(values) < 2:
        return ""
    said = [v for v in values if re.search(rf"(?<![\w.]){re.escape(v.split()[0])}(?![\w]|\.\d)", answer)]
    if len(said) == len(values):
        return _listed_total(answer, result, question)
    if not (said or _says_total(answer, result)):
        return ""
    if is_chinese(question):
        return f"\n（{name} 在这些行中的值：" + "、".join(values) + "。）"
    return f"\n(The {name} values in these lines: " + ", ".join(values) + ".)"


def _listed_total(answer: str, result: Mapping[str, Any], question: str) -> str:
    """An answer that lists each line's value of a quantity (a number its kind writes a unit after:
    "2703, 2263, 2087 and 2128 bytes") gets their total after it: "how many bytes did task 8.0 send"
    asks for what they add up to, and a 1.5B model listed them without it."""
    st = result.get("param_stats") or {}
    if not st.get("unit") or not isinstance(st.get("sum"), (int, float)) or _says_total(answer, result):
        return ""
    total = f"{_num(st['sum'])} {st['unit']}"
    return f"\n（合计 {total}。）" if is_chinese(question) else f"\n(In all: {total}.)"


def _says_total(answer: str, result: Mapping[str, Any]) -> bool:
    """The answer writes the sum of the asked parameter's values (param_stats)."""
    total = (result.get("param_stats") or {}).get("sum")
    if not isinstance(total, (int, float)):
        return False
    for f in figures(answer):
        try:
            if abs(float(f.replace(",", "")) - total) <= 1e-6 * max(1.0, abs(total)):
                return True
        except ValueError:
            continue
    return False


def _every_line(result: Mapping[str, Any], question: str) -> str:
    """A count equal to every stored line is suspect: rarely what a question about something means."""
    call = json.dumps(result.get("call") or {}, ensure_ascii=False)
    if is_chinese(question):
        return f"（注意：这是存储中全部 {result['count']} 行的数目；查询 {call} 没有筛掉任何一行。）"
    return f"(Note: that is every stored line, {result['count']}; the query {call} filtered none out.)"


# The answer's own words for the figures a result gives (render._STATS_WORDS, the answers' usual words):
# "the maximum port ... was 56423" claims the maximum. Not "most" (the most frequent value, top_k) nor
# "in all" / 一共 (a count's words as often as a sum's).
_CLAIMS = (("max", r"maximum|max|largest|highest|biggest|greatest|最大|最高"),
           ("min", r"minimum|min|smallest|lowest|最小|最低"),
           ("sum", r"total|sum|add(?:s|ed)? up to|合计|总和|总计"),
           ("avg", r"average|mean|平均"))
_CLAIM = re.compile("|".join(f"(?P<{k}>(?<![A-Za-z])(?:{words})(?![A-Za-z]))" for k, words in _CLAIMS), re.I)
_CLAUSE_END = re.compile(r"[。！？；;，,\n(（]|\.(?=\s|$)")
_CLAIM_REACH = 80          # characters after the word in which its figure is written
# dates and clock times are no claimed figure: "the maximum was on Dec 10 at 06:55:48, port 60948"
_WHEN_WRITTEN = re.compile(r"\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?\s+\d{1,2}\b|"
                           r"\d{1,4}\s*[年月日号时点分秒]|\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?", re.I)


def _stats_of(result: Mapping[str, Any]) -> Mapping[str, Any]:
    """Where a result keeps its figures over a parameter: a count's param_stats, a listing's
    listed_stats, a stats call's own result."""
    op = str((result.get("call") or {}).get("op"))
    st = result.get("param_stats") if op == "count" else result.get("listed_stats") if op == "lines" else result
    return st or {}


def _figures_of(result: Mapping[str, Any]) -> dict[str, float]:
    st = _stats_of(result)
    return {k: float(st[k]) for k in ("max", "min", "sum", "avg") if isinstance(st.get(k), (int, float))
            and (st.get("n") or 0) > 1}


def misstated(answer: str, result: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(figure name, the number the answer gave for it) where the answer names a figure of the result
    (its maximum, minimum, sum or average over several values) and writes another number right after
    the name, in the same clause ("the maximum port was 56423" when the lines' maximum is 60948). The
    count of lines or values ("a total of 553 lines", "the average of the 40 values") and dates and clock
    times are not such a number."""
    return list(dict.fromkeys((key, answer[a:b]) for key, a, b in _misstatements(answer, result)))


def _misstatements(answer: str, result: Mapping[str, Any]) -> list[tuple[str, int, int]]:
    """misstated()'s figures with where the answer writes their wrong numbers: (name, start, end)."""
    have = _figures_of(result)
    if not have:
        return []
    counts = {float(result[k]) for k in ("count", "n") if isinstance(result.get(k), (int, float))}
    counts |= {float((result.get("param_stats") or {}).get("n") or -1)}
    wrong: list[tuple[str, int, int]] = []
    for m in _CLAIM.finditer(answer):
        key = m.lastgroup
        if key not in have:
            continue
        rest = answer[m.end():m.end() + _CLAIM_REACH]
        end = _CLAUSE_END.search(rest)
        clause = _WHEN_WRITTEN.sub(lambda t: " " * len(t.group()), rest[:end.start()] if end else rest)
        got = _PLAIN_NUMBER.search(clause)
        if not got:
            continue
        x, want = float(got.group()), have[key]
        tol = 0.05 + 1e-3 * abs(want) if key == "avg" else 1e-9 * max(1.0, abs(want))
        if abs(x - want) > tol and x not in counts:      # "the average of the 40 values": the count
            wrong.append((key, m.end() + got.start(), m.end() + got.end()))
    return wrong


def corrected(answer: str, result: Mapping[str, Any], wrong: list[tuple[str, int, int]] | None = None) -> str | None:
    """The answer with each misstated figure's number replaced in place by the result's ("the maximum port
    was 46973" -> "... was 60924": an operator reads one figure, not a wrong one and a note); None when
    none is misstated. (A number with a unit no source writes, "9.2 KB", was replaced before: check.)"""
    wrong = _misstatements(answer, result) if wrong is None else wrong      # check() has them already
    if not wrong:
        return None
    have = _figures_of(result)
    out = answer
    for key, a, b in sorted(wrong, key=lambda w: -w[1]):
        out = out[:a] + _num(have[key]) + out[b:]
    return out

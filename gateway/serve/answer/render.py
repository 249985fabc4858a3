"""A query's result in words, one renderer for both readers: render_result for the answer's prompt
(plain sentences a 1.5B model restates reliably; every figure as the store gave it), plain_answer for
the operator when the model's answer fails its check (the question's language). Same labels, same
times and numbers (_shown_time, _num). Pure functions.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from itertools import groupby
from typing import Any, Mapping, Sequence

from gateway.ingest.header import match_ts, scan
from gateway.ingest.structured import pairs_of
from gateway.pipeline.fields import UNITS, number_of
from gateway.serve.answer.call import WANTS
from gateway.serve.prompts import is_chinese

RESULT_CHARS = 900            # the result as the prompt quotes it (~250 tokens)
LINE_SHOWN = 160              # a line's text in it
FEW_SHOWN = 480               # ... in a listing of FEW_QUOTED lines at most, or a first/last line: read whole
ODD_QUOTED = 2                # a plain count quotes this many lines of kinds it holds once
HEADER_CHARS = 120            # a line's header (time, level, thread, component) ends within this
LONG_HEADER = 64              # a header longer than this is said short even on a line that fits (below)
_LABEL = {"box": ("box", "箱"), "template": ("kind of message", "消息"), "ip": ("IP address", "IP 地址"), "value": ("value", "值"),
          "host": ("host", "主机"), "component": ("component", "组件"), "level": ("level", "级别"),
          "day": ("day", "日期"), "hour": ("hour", "小时")}


def _captured_first(r: Mapping[str, Any], end: str | None) -> str:
    """"X is ..." of the line a pattern's call found, said first: a 1.5B model otherwise reads a time or
    a host off the line instead of the value the question asks for."""
    lines = [r[end]] if end in ("first", "last") and isinstance(r.get(end), dict) else \
        [*r.get("lines", [])[:1], *(r[k] for k in ("last",) if isinstance(r.get(k), dict))][:1]
    got = (lines[0].get("captured") or {}) if lines else {}
    if any((x.get("captured") or got) != got for x in r.get("lines") or [] if isinstance(x, dict)):
        return ""       # a listing whose lines capture several values: the first one's is not the answer
    return "".join(f"{k} is {v}. " for k, v in got.items())


def render_result(result: Mapping[str, Any], end: str | None = None, zh: bool = False) -> str:
    """The result in plain sentences for the answer's prompt (a 1.5B model restates a sentence more
    reliably than it reads nested JSON): every figure as the store gave it, times as the log wrote
    them, clipped to RESULT_CHARS. The JSON itself goes to the API as the answer's source. `zh`: the
    question is Chinese (stats name their figures in Chinese words too)."""
    r = dict(result)
    if r.get("error"):
        text = f"The query failed: {r['error']}."
    elif r.get("no_match"):
        w = r.get("without_text")
        text = "No line matches this query (0 lines)." + (
            f' Without the text {w["text"]}, the other conditions match {w["count"]} lines.' if w else "")
    else:
        op = str((r.get("call") or {}).get("op"))
        text = _describe_first_last(r, end) if op == "first_last" else \
            _describe_stats(r, zh) if op == "stats" else _DESCRIBE.get(op, _describe_count)(r)
        if op in ("lines", "first_last"):
            text = _captured_first(r, end) + text
        if r.get("text_relaxed_to"):
            text += f' (Matched on the words "{r["text_relaxed_to"]}"; the other words asked for occur in none of them.)'
        if r.get("truncated"):
            text += " (Only the first lines were read: the figures may be partial.)"
    return text if len(text) <= RESULT_CHARS else text[:RESULT_CHARS] + "...(clipped)"


def _num(x: Any) -> str:
    if isinstance(x, float):
        return str(int(x)) if x.is_integer() else str(round(x, 3))
    return str(x)


def shown_avg(r: Mapping[str, Any]) -> str:
    """An average said to the precision of the numbers it averages (one decimal at least): 2382.771 ms of
    whole milliseconds is 2382.8."""
    places = max([1, *(len(_num(r[k]).partition(".")[2]) for k in ("min", "max") if r.get(k) is not None)])
    return _num(round(float(r["avg"]), places))


def _where(line: Mapping[str, Any], room: int = LINE_SHOWN) -> str:
    """`[in box <box> ][at <time> ][(<host>, <component>; <captured>)]: <text>` of a result line; the time,
    host and component only where the text does not say them (said twice, they cost the prompt and were
    copied into listings). A fleet node's line names its box before the time: in the parenthesis the 1.5B
    answered "which box first" with the time alone. `room`: the text's characters (a few lines read whole:
    the datanode a long pipeline line names last)."""
    message = message_of(line, room)
    t, text = _shown_time(line), message or str(line.get("text", ""))[:room]
    box = f"in box {line['box']}" if line.get("box") else ""
    when = f"at {t}" if _unwritten(t, text) else ""
    named = {**line, **header_fields(line)} if message else line
    fields = ("host", "component", "level") if message else ("host", "component")
    who = ", ".join(f"{k} {named[k]}" for k in fields if named.get(k) and str(named[k]) not in text)
    got = "; ".join(f"{k} = {v}" for k, v in (line.get("captured") or {}).items())
    said = " ".join(x for x in (box, when, f"({'; '.join(x for x in (who, got) if x)})" if who or got else "") if x)
    return f"{said}: {text}" if said else text


def message_of(line: Mapping[str, Any], room: int | None = None) -> str | None:
    """A line longer than `room` (LINE_SHOWN when None), or whose header ends past LONG_HEADER, from past
    its header's component, the header's last field ("... org.apache.hadoop...TaskAttemptImpl: TaskAttempt:
    [...] on NM: [...]" from "TaskAttempt"), clipped to `room` when given: a clip then takes the header,
    whose fields are said apart, not the message's end; a long header (a thread and a logger's dotted
    class) costs a listing more than its fields said short. None for a line that fits
    with a short header, whose component is not in its first HEADER_CHARS, or with nothing after it."""
    text = str(line.get("text", ""))
    if (text[:1] == "{" or "=" in text[:64]) and pairs_of(text) is not None:
        said = scan(text).message           # a JSON or logfmt line: its message pair first (the rest as
        return (said[:room] if room else said) or None   # key=value), not its metadata's run of keys
    end = _past_component(text, line)
    if end is None or (len(text) <= (room or LINE_SHOWN) and end <= LONG_HEADER):
        return None
    rest = text[end:].lstrip(" :|>-")
    return (rest[:room] if room else rest) or None


def _past_component(text: str, line: Mapping[str, Any]) -> int | None:
    """Where `text` goes on past the line's component, the header's last field; None when it has none or
    does not write it within its first HEADER_CHARS."""
    comp = str(line.get("component") or "")
    i = text.find(comp) if comp else -1
    return i + len(comp) if 0 <= i <= HEADER_CHARS else None


def header_fields(line: Mapping[str, Any]) -> dict[str, str]:
    """The fields of a header message_of left out, said short: a dotted component by its last part (a
    logger's class, "TaskAttemptImpl"), the level unless it is the ordinary info."""
    comp = str(line.get("component") or "")
    level = str(line.get("level") or "")
    return {"component": comp.rsplit(".", 1)[-1] or comp, "level": "" if level == "info" else level}


def _unwritten(t: Any, text: str) -> bool:
    """The shown time is worth saying before the line: the line's text does not write it."""
    return not (t is not None and str(t) and str(t) in text)


def _shown_time(line: Mapping[str, Any]) -> Any:
    """A line's time for the answer: as the log wrote it when that has no year (an ISO form would show a
    guessed one), else in ISO form: a 1.5B model rewrites "2005-08-28-02.57.06.184496" or an epoch
    ("2:57:06", "1125197826") but copies "2005-08-28 02:57:06"."""
    written = line.get("time_text")
    if written:
        m = match_ts(str(written), 0)
        g = m.groupdict() if m else {}
        if not (g.get("Y") or g.get("y") or g.get("E")) or line.get("time") is None:
            return written
    return _iso(line.get("time"))


def _describe_count(r: Mapping[str, Any]) -> str:
    return f"{r.get('count', 0)} lines match."


def _describe_top(r: Mapping[str, Any]) -> str:
    by = r.get("by") or (r.get("call") or {}).get("by") or "template"
    label = _LABEL[by][0] if by in _LABEL else (f"{by}" if r.get("of_param") else f'value written after "{by}"')
    top = [f"{v['value']} ({v.get('count', v.get('lines'))} lines)" for v in r.get("top", [])]
    if not top:
        return f"{r.get('count', 0)} lines match; none of them has such a value."
    rest = "; ".join(f"{i}. {t}" for i, t in enumerate(top[1:], 2))      # the first apart: a 1.5B model
    return (f"{r.get('count', 0)} lines match. The most frequent {label} is {top[0]}."       # picked the
            + (f" The next ones: {rest}." if rest else ""))                                    # longer 2nd


def _describe_stats(r: Mapping[str, Any], zh: bool = False) -> str:
    if not r.get("n"):
        return f"{r.get('count', 0)} lines match, but none of them holds that number."
    total = f"; they add up to {_num(r['sum'])} in all" if r.get("sum") is not None and r["n"] > 1 else ""
    # the figures side by side, their lines after: with each line between them a 1.5B model gave the
    # maximum for "the smallest"
    # each figure with the words a question asks it by (a 1.5B matches words better than meanings: it
    # answered "the smallest port" with the maximum, "最高值" with the average), in Chinese for a Chinese
    # question
    mx, mn, avg = (_STATS_WORDS_ZH if zh else _STATS_WORDS)
    return (_asked_first(r, zh) + f"{r['n']} numbers in {r.get('count', 0)} matching lines: maximum ({mx}) {written(r, 'max')}, minimum "
            f"({mn}) {written(r, 'min')}, average ({avg}) {shown_avg(r)}{total}. The maximum {_where(r['max_line'])}. "
            f"The minimum {_where(r['min_line'])}.")


def asked_stat(r: Mapping[str, Any]) -> tuple[str, str] | None:
    """(the figure a stats call's `want` names, as the answer should write it), or None."""
    want = str((r.get("call") or {}).get("want") or "")
    if want not in WANTS or r.get(want) is None:
        return None
    if r.get("n") == 1:            # one number: as its line writes it ("393.0 KB", not a sum of 393)
        return want, _with_unit(r, "max")
    return want, (shown_avg(r) if want == "avg" else _with_unit(r, want) if want in ("max", "min") else _num(r["sum"]))


def _with_unit(r: Mapping[str, Any], key: str) -> str:
    """An extreme as its line writes it, with the unit written right after it ("5.2 KB", "716 ms"): the
    figure alone does not say what it measures, and a 1.5B model copies what it is given."""
    fig = written(r, key)
    text = str((r.get(f"{key}_line") or {}).get("text") or "")
    m = re.search(rf"(?<![\w.]){re.escape(fig)}(\s?)([A-Za-zµ%°]+)", text)
    return f"{fig}{m.group(1)}{m.group(2)}" if m and m.group(2).lower() in UNITS else fig


def _asked_first(r: Mapping[str, Any], zh: bool) -> str:
    """The figure the call asked for, said before the others: with every figure side by side a 1.5B
    model answered "the total" with the maximum."""
    asked = asked_stat(r)
    if asked is None:
        return ""
    words = dict(zip(WANTS, (*(_STATS_WORDS_ZH if zh else _STATS_WORDS), _SUM_WORDS[zh])))
    return f"Asked for: {asked[0]} ({words[asked[0]]}) = {asked[1]}. "


_SUM_WORDS = ("the total, in all", "总和、合计")
_STATS_WORDS = ("the largest, highest", "the smallest, lowest", "the mean")
_STATS_WORDS_ZH = ("最大值、最高、最多", "最小值、最低、最少", "平均值")


def written(r: Mapping[str, Any], key: str) -> str:
    """A stats extreme as its line writes it ("993.0", "0.50"): the first number of its line equal to it."""
    line = r.get(f"{key}_line") or {}
    for m in _PLAIN_NUMBER.finditer(str(line.get("text") or "")):
        if float(m.group()) == float(r[key]):
            return m.group()
    return _num(r[key])


_PLAIN_NUMBER = re.compile(r"(?<![\w.:/-])[-+]?\d+(?:\.\d+)?(?![\w.:/-]?\d)")


def _describe_first_last(r: Mapping[str, Any], end: str | None = None) -> str:
    """Both ends, or only the one the question asks for (`end`: "first" | "last")."""
    if end in ("first", "last"):
        return f"{r.get('count', 0)} lines match. The {end} of them (the {end} time it appeared) {_where(r[end], FEW_SHOWN)}."
    return (f"{r.get('count', 0)} lines match. The first {_where(r['first'], FEW_SHOWN)}. "
            f"The last {_where(r['last'], FEW_SHOWN)}.")


def _describe_buckets(r: Mapping[str, Any]) -> str:
    per = ", ".join(f"{_iso(b['start'])}: {b['count']}" for b in r.get("buckets", []))
    return f"{r.get('count', 0)} lines match; lines per {_num(r.get('bucket_s'))} s from: {per}."


def _describe_lines(r: Mapping[str, Any]) -> str:
    room = FEW_SHOWN if len(r.get("lines", [])) <= FEW_QUOTED else LINE_SHOWN
    shown = "\n".join(f"- {_where(x, room)}{again(n, first)}" for x, n, first in fold(r.get("lines", [])))
    return f"{r.get('count', 0)} lines match; the newest {len(r.get('lines', []))}, newest first:\n{shown}"


def fold(lines: Sequence[Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], int, Mapping[str, Any]]]:
    """(line, n, oldest) per message of `lines`, in their order (each message by its first line): lines
    that say the same (same_message) shown once. Listed one by one, a message written again (a retry, a
    poll) fills the prompt with one text, and a 1.5B model copies it into its answer once per line."""
    groups: dict[tuple[str, ...], list] = {}
    for x in lines:
        g = groups.setdefault(same_message(x), [x, 0, x])
        g[1] += 1
        if _before(x, g[2]):
            g[2] = x
    return [tuple(g) for g in groups.values()]


def _before(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """a's time is earlier than b's (False when either has none)."""
    try:
        return float(a.get("time")) < float(b.get("time"))     # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def same_message(line: Mapping[str, Any]) -> tuple[str, ...]:
    """What a line says apart from its header's time and the numbers of its header before the message (a
    process or thread id): (box, host, text with those taken out)."""
    text, t = str(line.get("text", "")), str(line.get("time_text") or "")
    if t:
        text = text.replace(t, "", 1)
    end = _past_component(text, line) or 0
    if m := _HEADER_NUMBER.match(text, end):
        end = m.end()
    return str(line.get("box") or ""), str(line.get("host") or ""), _DIGITS.sub("#", text[:end]) + text[end:]


_HEADER_NUMBER = re.compile(r"\s*[\[(]\d+[\])]")    # "sshd[25534]": the process id after the component
_DIGITS = re.compile(r"\d+")


def again(n: int, first: Mapping[str, Any], zh: bool = False, shown: Mapping[str, Any] | None = None) -> str:
    """A folded line's count and its oldest time: " (x3, the first at ...)"; the count alone when the
    oldest is the `shown` line itself (a listing oldest first)."""
    if n <= 1:
        return ""
    t = _shown_time(first) if first is not shown else None
    return (f"（x{n}，最早在 {t}）" if zh else f" (x{n}, the first at {t})") if t else f" (x{n})"


_DESCRIBE = {"count": _describe_count, "top_k": _describe_top, "stats": _describe_stats,
             "first_last": _describe_first_last, "buckets": _describe_buckets, "lines": _describe_lines}


def _plain_where(line: Mapping[str, Any], zh: bool, timed: bool = True) -> str:
    """A line for the plain answer: its time (unless it writes it as the answer gives it; never when not
    `timed`, a listing having said it), the box, host and component its text does not write, its text."""
    text, written = str(line.get("text", "")), str(line.get("time_text") or "")
    who = _who(line, text)
    t = str(_shown_time(line)) if timed and _unwritten(_shown_time(line), text) else ""   # it writes its time
    if (t or not timed) and written and text.startswith(written):   # ... in another form ("17/06/09 20:11:11
        text = text[len(written):].lstrip()                          # INFO"): said once, as the answer does
    if zh:
        return f"{t}（{'，'.join(who)}）：{text}" if who else f"{t}：{text}" if t else text
    named = " (" + ", ".join(who) + ")" if who else ""
    said = f"{t}{named}: {text}" if t or named else text
    return said if timed else said.lstrip()


def _plain_listing(lines: list, zh: bool) -> str:
    """Folded lines, newest first; lines of one second under their time once, each from past the time it
    writes ("- T:" then "  - line"): listed whole, three lines of one second said it three times."""
    out = []
    for t, group in groupby(lines, key=lambda g: str(_shown_time(g[0]) or "")):
        group = list(group)
        if len(group) == 1 or not t:
            out += [f"- {_plain_where(x, zh)}{again(k, first, zh)}" for x, k, first in group]
        else:
            out += [f"- {t}{'：' if zh else ':'}"] + [f"  - {_plain_where(x, zh, timed=False)}{again(k, first, zh)}"
                                                      for x, k, first in group]
    return "\n".join(out)


def _who(line: Mapping[str, Any], text: str) -> list[str]:
    """The box, host and component of a line that its text does not write."""
    return [str(line[k]) for k in ("box", "host", "component") if line.get(k) and str(line[k]) not in text]


def _iso(t: Any) -> Any:
    try:
        return datetime.fromtimestamp(float(t), tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    except (TypeError, ValueError, OverflowError, OSError):
        return t


FEW_QUOTED = 3                # a count of at most this many lines quotes its newest line


def _param_plain(st: Mapping[str, Any], zh: bool) -> str:
    """A count's figures over the parameter its question asks for (detail.py's param_stats): a quantity's
    total with its values, an id's values. "4 lines match" alone did not answer "how many bytes"."""
    name, vals, unit = st.get("of_param"), [str(v) for v in st.get("values") or []], st.get("unit")
    if not name:
        return ""
    if unit and isinstance(st.get("sum"), (int, float)):
        each = (("（" + "、".join(vals) + f" {unit}）") if zh else f" ({', '.join(vals)} {unit})") if vals else ""
        return (f"{name} 值合计 {_num(st['sum'])} {unit}{each}。" if zh
                else f" Their {name} values add up to {_num(st['sum'])} {unit}{each}.")
    total = st.get("sum") if isinstance(st.get("sum"), (int, float)) and (st.get("n") or 0) > 1 and all(
        number_of(v) is not None for v in vals) else None        # numbers without a unit: their sum too (the
    if vals and total is not None:                               # prompt says it; "加起来一共多少" asks it)
        return (f"{name} 值：{'、'.join(vals)}（{st['n']} 行合计 {_num(total)}）。" if zh
                else f" Their {name} values: {', '.join(vals)} (over the {st['n']} lines they sum to {_num(total)}).")
    if vals:
        return f"{name} 值：{'、'.join(vals)}。" if zh else f" Their {name} values: {', '.join(vals)}."
    return ""


def plain_answer(result: Mapping[str, Any], question: str, end: str | None, said: str = "") -> str:
    """The result said plainly, in the question's language: every figure as the store gave it. `said`: an
    answer it is cited after; a count's line that answer already quotes is not quoted again."""
    zh = is_chinese(question)
    call = json.dumps(result.get("call") or {}, ensure_ascii=False)
    if result.get("error"):
        return f"查询失败：{result['error']}（查询：{call}）" if zh else f"The query failed: {result['error']} (query: {call})."
    if result.get("no_match"):
        w = result.get("without_text")
        if zh:
            return f"存储的日志里没有符合的行（查询：{call}）。" + (f"去掉 {w['text']} 后，其他条件符合 {w['count']} 行。" if w else "")
        return f"No stored line matches (query: {call})." + (
            f' Without the text {w["text"]}, the other conditions match {w["count"]} lines.' if w else "")
    if result.get("text_relaxed_to"):     # no line holds every word asked: said first, then what matched
        asked, got = (result.get("call") or {}).get("text"), result["text_relaxed_to"]
        rest = plain_answer({k: v for k, v in result.items() if k != "text_relaxed_to"}, question, end, said)
        return (f"没有一行同时含有“{asked}”；只含“{got}”的：{rest}" if zh else
                f'No line holds all of "{asked}"; on "{got}" alone: {rest}')
    op = str((result.get("call") or {}).get("op"))
    return _PLAIN.get(op, _plain_lines)(result, zh, end, said)


def _plain_count(result: Mapping[str, Any], zh: bool, end: str | None, said: str) -> str:
    """What was counted: the call; where most of its lines are (plan._most); a few lines quoted."""
    n, call = result.get("count", 0), json.dumps(result.get("call") or {}, ensure_ascii=False)
    most = [(_LABEL.get(by, (by, by)), t["value"], t.get("count", t.get("lines")))
            for by, t in (result.get("most") or {}).items()]
    # a count of a few lines that the result holds quotes the newest: "How was the driver registered?"
    # is answered by its one line ("Successfully registered with driver"), not by "1 line matches"
    few = [x for x in result.get("lines") or [] if isinstance(x, dict)][:1] if n <= FEW_QUOTED else []
    few = [x for x in few if str(x.get("text", "")) not in said]
    # a kind of one line among them (detail._kinds_counted): the odd one out, quoted as the prompt did
    odd = [x for x in result.get("kind_lines") or [] if isinstance(x, dict) and str(x.get("text", "")) not in said
           and x.get("id") not in {y.get("id") for y in few}][:ODD_QUOTED]
    figs = _param_plain(result.get("param_stats") or {}, zh)
    if zh:
        return f"共有 {n} 行日志符合查询（查询：{call}）。" + figs + "".join(
            f"其中最多的{label[1]}是“{v}”（{c} 行）。" for label, v, c in most) + "".join(
            f"{'这一行' if n == 1 else '最新的一行'}：{_plain_where(x, zh)}" for x in few) + "".join(
            f"\n只有一行的一类：{_plain_where(x, zh)}" for x in odd)
    head = "1 line matches" if n == 1 else f"{n} lines match"
    return f"{head} (query: {call})." + figs + "".join(f' Most of them: {label[0]} "{v}" ({c}).'
                                                 for label, v, c in most) + "".join(
        f" {'It' if n == 1 else 'The newest'}: {_plain_where(x, zh)}" for x in few) + "".join(
        f"\nA kind of one line among them: {_plain_where(x, zh)}" for x in odd)


def _plain_top(result: Mapping[str, Any], zh: bool, end: str | None, said: str) -> str:
    n = result.get("count", 0)
    label, label_zh = _LABEL.get(str(result.get("by")), (f'value after "{result.get("by")}"',
                                                         f"“{result.get('by')}”后的值"))
    top = list(result.get("top") or [])
    if not top:
        return f"{n} 行符合，但都没有这样的值。" if zh else f"{n} lines match; none of them has such a value."
    c0 = top[0].get("count", top[0].get("lines"))
    rest = [f"{t['value']}（{t.get('count', t.get('lines'))} 行）" if zh else
            f"{t['value']} ({t.get('count', t.get('lines'))} lines)" for t in top[1:5]]
    if zh:
        return (f"最常见的{label_zh}是“{top[0]['value']}”（{c0} 行，共 {n} 行符合）。"
                + (f"其次：{'；'.join(rest)}。" if rest else ""))
    return (f'The most frequent {label} is "{top[0]["value"]}" ({c0} of {n} matching lines).'
            + (f" Next: {'; '.join(rest)}." if rest else ""))


def _plain_stats(result: Mapping[str, Any], zh: bool, end: str | None, said: str) -> str:
    n, num = result.get("count", 0), _num
    if not result.get("n"):
        return f"{n} 行符合，但都没有这个数值。" if zh else f"{n} lines match, but none of them holds that number."
    mx, mn, avg = written(result, "max"), written(result, "min"), shown_avg(result)
    asked = asked_stat(result)      # the asked figure first, where the text below does not begin with it
    lead = "" if asked is None or (asked[0] == "sum") != (mx == mn) else \
        {"max": ("The maximum", "最大值"), "min": ("The minimum", "最小值"), "avg": ("The average", "平均值"),
         "sum": ("The sum", "总和")}[asked[0]][zh] + f" {asked[1]}" + ("。" if zh else ". ")
    if mx == mn:     # one value (said once: the same line twice reads as a loop)
        return lead + (f"{result['n']} 个数值都是 {mx}，例如在 {_plain_where(result['max_line'], zh)}。" if zh else
                       f"All {result['n']} values are {mx}, e.g. at {_plain_where(result['max_line'], zh)}.")
    # one line quoted (the maximum's, the minimum's when the call asked for it): two lines of one kind
    # share long runs and read as a loop
    where = lambda line: _plain_where(line, zh)                         # noqa: E731
    low, high = (where, _shown_time) if asked is not None and asked[0] == "min" else (_shown_time, where)
    if zh:
        return lead + ((f"总和 {num(result['sum'])}（{result['n']} 个数值）。" if result.get("sum") is not None else "")
                       + f"最大值 {mx}，在 {high(result['max_line'])}。最小值 {mn}（{low(result['min_line'])}）。平均值 {avg}。")
    total = f"The sum is {num(result['sum'])} ({result['n']} values). " if result.get("sum") is not None else ""
    return (f"{lead}{total}The maximum is {mx}, at {high(result['max_line'])}. The minimum is {mn} (at "
            f"{low(result['min_line'])}). The average is {avg}.")


def _plain_first_last(result: Mapping[str, Any], zh: bool, end: str | None, said: str) -> str:
    n = result.get("count", 0)
    ends = [end] if end in ("first", "last") else ["first", "last"]
    if len(ends) == 2 and result["first"].get("id") == result["last"].get("id"):
        return (f"只有 1 行符合：{_plain_where(result['first'], zh)}。" if zh else
                f"One line matches, at {_plain_where(result['first'], zh)}.")
    if zh:
        at = {"first": "第一次出现在", "last": "最后一次出现在"}
        return f"共 {n} 行符合。" + "".join(f"{at[e]} {_plain_where(result[e], zh)}。" for e in ends)
    return f"{n} lines match. " + " ".join(f"It {e} appeared at {_plain_where(result[e], zh)}." for e in ends)


def _plain_buckets(result: Mapping[str, Any], zh: bool, end: str | None, said: str) -> str:
    n = result.get("count", 0)
    per = "，".join if zh else ", ".join
    spans = per(f"{_shown_time({'time': b['start']})}: {b['count']}" for b in result.get("buckets", []))
    return f"共 {n} 行符合，按时间：{spans}。" if zh else f"{n} lines match; over time: {spans}."


def _plain_lines(result: Mapping[str, Any], zh: bool, end: str | None, said: str) -> str:
    """A listing: the asked parameter's value read off its lines first ("port: 49811"), then one line of
    each message."""
    n = result.get("count", 0)
    lines = fold(list(result.get("lines") or []))[:3]
    shown = _plain_listing(lines, zh)
    got: dict[str, list[str]] = {}
    for x, _, _ in lines:
        for k, v in (x.get("captured") or {}).items():
            got.setdefault(str(k), []).append(str(v))
    read = "".join(f"{k}{'：' if zh else ': '}{', '.join(dict.fromkeys(v))}{'。' if zh else '. '}" for k, v in got.items())
    return read + (f"共 {n} 行符合，最新的：\n{shown}" if zh else f"{n} lines match; the newest:\n{shown}")


_PLAIN = {"count": _plain_count, "top_k": _plain_top, "stats": _plain_stats, "first_last": _plain_first_last,
          "buckets": _plain_buckets, "lines": _plain_lines}

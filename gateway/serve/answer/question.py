"""What an operator's question itself names, read without the model: phrases it quotes, times it
writes, the log words, hosts, components and levels it mentions. The store-query grammar
(gateway.serve.answer.call) offers the model only these as filters: a 1.5B model otherwise copies
filters from the log in its context ("sshd", level "info") or invents words the log never holds, and
the query then counts the wrong lines or none.

Grounding rules (general, not per log format):
- a phrase in quotes ("...", \u201c...\u201d, \u300c...\u300d) is the text filter, placeholders (<*>, <N>) kept;
- a log word is offered when the question holds it, or a word sharing its first PREFIX letters
  ("faults" ~ "fault", "failures" ~ "Failed"); a question without Latin-script words (Chinese) is
  offered every log word of the store, for the model to translate into;
- a host or component when the question names it (or a part of it no other value shares: "capper" ~
  "line3/capper"); the log's own name ("in the Hadoop log") names nothing;
- a level when the question names one (English level words, Chinese \u9519\u8bef/\u544a\u8b66/...);
- a recent window (last_minutes) only when the question asks for recent time;
- words naming a field ("which station", "what level") are no text filter;
- nothing else is read from the wording: the op, the field or parameter to count by, the number to take
  are the model's to choose, given the kinds of line the data points at (gateway.serve.answer.grounding).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Sequence

from gateway.ingest.header import _LETTER_LEVELS, _LEVELS, match_ts
from gateway.serve.answer.glossary import english_terms, han_content

MAX_PHRASE_BYTES = 200          # longer quotes are not offered whole (the call's token budget)
PREFIX = 4                       # letters two words share to count as one ("fault", "faults")
JSON_SAFE = re.compile(r'^[^"\\\x00-\x1f]+$')
# "...", “...”, 「...」 and '...' (its quotes not inside a word: "what's", "the operators' shift")
_QUOTED = re.compile(r'"([^"\n]{2,200})"|\u201c([^\u201d\n]{2,200})\u201d|\u300c([^\u300d\n]{2,200})\u300d|'
                     r"(?<![\w'])'([^'\n]{2,200})'(?![\w'])")
QUOTED = _QUOTED                   # a quoted phrase (the line's own words: not glossed)
_CLOCK = re.compile(r"(?<![\d:])(\d{1,2}:\d{2}(?::\d{2})?)(?![\d:])")
CLOCK_TEXT = _CLOCK                # a clock time as text (retrieval drops it from search words)
_DATE = re.compile(r"(?<!\d)(\d{4}-\d{2}-\d{2})(?!\d)")
_WORD = re.compile(r"[A-Za-z][\w.'/-]*[A-Za-z0-9]|[A-Za-z]")
_ZH_LEVELS = {"错误": "error", "报错": "error", "告警": "warning", "警告": "warning", "报警": "warning",
              "严重": "critical", "致命": "critical", "信息": "info", "调试": "debug", "通知": "notice"}
_RECENT = re.compile(r"\b(?:last|past|previous)\s+(?:\d+\s*|few\s+|several\s+|\w+\s+)?(?:sec|second|min|minute|hour|"
                     r"day)s?\b|(?<!most )\brecent(?:ly)?\b|\bjust now\b|\bso far today\b|最近(?!的?一[次条个回])|刚才|过去|分钟|"
                     r"小时", re.IGNORECASE)     # "the most recent one", "最近一次": the last line, not a window
_FIELD_WORDS = {"component", "components", "program", "process", "service", "module", "class", "logger", "host",
                "machine", "node", "server", "station", "device", "ip", "address", "level", "severity", "kind",
                "type", "message", "time", "line", "one", "value", "day", "hour", "minute"}
_RANK = {"emergency": 0, "alert": 1, "critical": 2, "error": 3, "warning": 4, "notice": 5, "info": 6, "debug": 7}
_WRITTEN_ONLY = {"fault", "failure"}   # a level only as the log writes it ("FAULT", BGL's "FAILURE"): "a Type
                                        # A fault", "ssh auth failures" are the message's (PAM's lines)
_WORSE_TOO = {"error", "critical"}          # "errors": error and every worse level
_LEVEL_WORD = re.compile(r"[A-Za-z][\w.'/]*[A-Za-z0-9]|[A-Za-z]")   # _WORD's, a hyphen between: "ERROR-level"
_LEVEL_AFTER = re.compile(r"\s*(?:-?\s*level|级别|等级)", re.I)
# logcat's level letter named as one: 'W level', '"F" 级别', 'level "E"' (quoted when the name is before it)
_LETTER_LEVEL = re.compile(r"(?<![\w-])[\"\u201c']?([VDIWEFA])[\"\u201d']?\s*(?=level\b|级别|等级)"
                           r"|(?:level|级别|等级)\s*[\"\u201c']([VDIWEFA])[\"\u201d']", re.I)
_ZH_SUBJECT = re.compile(r"\s*([A-Za-z][\w.-]*)\s*(?=[\u4e00-\u9fff])")   # a Chinese question's Latin subject
_LOG_NAME = re.compile(r"[\w.-]+(?=\s+(?:log|logs|log file|journal|syslog)\b)|[A-Za-z][\w.-]*(?=\s*日志)", re.I)
_NOT_CONTENT = {"the", "a", "an", "of", "in", "on", "at", "to", "and", "or", "for", "by", "is", "was", "were", "are",
                "be", "did", "do", "does", "how", "many", "much", "what", "which", "when", "why", "who", "where", "log",
                "logs", "logged", "line", "lines", "time", "times", "most", "often", "there", "this", "that", "it",
                "its", "with", "from", "form", "value", "first", "last", "any", "so", "than", "after", "before",
                "cause", "causes", "caused", "reason", "reasons", "main", "happen", "happened", "highest", "lowest",
                "largest", "smallest", "maximum", "minimum", "average", "between", "inclusive", "since", "until",
                "number", "kind", "kinds", "type", "message", "messages", "common", "frequent", "has", "have", "had",
                "contain", "contains", "containing", "one", "utc", "gmt", "jan", "feb", "mar", "apr", "may", "jun", "jul",
                "aug", "sep", "oct", "nov", "dec"}   # question words, and the words of times it writes
# ... and the words of asking itself: with the above, what says nothing about which lines to read
# (server/retrieval's search words leave them out too)
STOP_WORDS = frozenset(_NOT_CONTENT | set("""
about ago all as been but can could going happening hour hours i if me minute minutes my no not our
please recent recently second seconds show tell their them then these they those today up we will
would you your 为什么 什么 怎么 问题
""".split()))


_ASK_END = re.compile(r"[?？]+")
MAX_ASKS = 3


def asks(question: str) -> list[str]:
    """The question's asks: sentences ended by a question mark ("How many E-STOPs? Which zone was
    hottest?", "急停按了几次？哪个区的温度最高？"), each answered by its own call; a question mark inside
    quotes ends nothing; text after the last one belongs to it. At most MAX_ASKS (the rest joins the last)."""
    masked = _QUOTED.sub(lambda m: "x" * len(m.group(0)), question)
    ends = [m.end() for m in _ASK_END.finditer(masked)]
    cuts = [e for e in ends if _an_ask(masked[e:next((x for x in ends if x > e), len(masked))])]
    parts = [question[a:b].strip() for a, b in zip([0, *cuts], [*cuts, len(question)])]
    parts = [x for x in parts if x]
    if len(parts) > MAX_ASKS:
        parts = [*parts[:MAX_ASKS - 1], " ".join(parts[MAX_ASKS - 1:])]
    return parts or [question]


def _an_ask(part: str) -> bool:
    """A part after a question mark is an ask of its own when it ends with one, or is a sentence (3+
    words, 4+ Han characters) rather than a remark ("(in UTC)")."""
    return bool(_WORD.search(part) or re.search(r"[\u4e00-\u9fff]", part)) and (
        bool(_ASK_END.search(part)) or len(_WORD.findall(part)) >= 3 or len(re.findall(r"[\u4e00-\u9fff]", part)) >= 4)


_SPAN = re.compile(r"(?:\b(?:last|past|previous|final|latest|most\s+recent)\s+|(?:最近|过去|最后|往前推|往回推)\s*)"
                   r"(\d{1,4}|[一二两三四五六七八九十]{1,3})\s*"
                   r"(seconds?|secs?|s|minutes?|mins?|m|hours?|h|days?|秒钟?|分钟|分|小时|个小时|天)(?![A-Za-z])", re.I)
_SPAN_UNIT_S = {"s": 1, "sec": 1, "second": 1, "秒": 1, "m": 60, "min": 60, "minute": 60, "分钟": 60, "分": 60,
                "h": 3600, "hour": 3600, "小时": 3600, "个小时": 3600, "day": 86400, "天": 86400}
_HAN_DIGITS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}


def han_number(text: str) -> int | None:
    """一..九十九 ("十" 10, "二十" 20, "十五" 15); None for anything else."""
    if text.isdigit():
        return int(text)
    if "十" not in text:
        return _HAN_DIGITS.get(text) if len(text) == 1 else None
    tens, _, ones = text.partition("十")
    t = _HAN_DIGITS.get(tens, 0 if tens else 1) if len(tens) <= 1 else None
    o = _HAN_DIGITS.get(ones, 0 if not ones else -1) if len(ones) <= 1 else -1
    return None if t is None or o is None or o < 0 else 10 * t + o


def span_s(question: str) -> float | None:
    """The recent window the question writes, in seconds ("in the last 10 minutes", "最近十分钟",
    "past 2 hours"); None when it writes none with a number ("过去几分钟": the model picks one)."""
    m = _SPAN.search(_QUOTED.sub(" ", question))
    if not m:
        return None
    n = han_number(m.group(1))
    unit = m.group(2).lower()
    unit = (unit[:-1] if len(unit) > 1 and unit.endswith("s") else unit) if unit.isascii() else unit.rstrip("钟")
    unit = {"sec": "s"}.get(unit, unit)
    return float(n * _SPAN_UNIT_S[unit]) if n and unit in _SPAN_UNIT_S else None


def log_names(question: str, levels: Sequence[str]) -> list[str]:
    """The words the question names the log by ("the HDFS log", "spark日志里", "the linux syslog"), not its
    levels ("ERROR 日志": lines of a level): what the lines are, not a word or id they hold."""
    return [m.group(0) for m in _LOG_NAME.finditer(_QUOTED.sub(" ", question))
            if m.group(0).lower() not in _NOT_CONTENT and not _levels(m.group(0), levels)[0]]


def without_window(question: str) -> str:
    """The question with the length of the recent window it writes blanked out ("最近 10 分钟", "the last
    10 minutes"): a window, not a value a line holds."""
    return _DURATION.sub(" ", question) if span_s(question) is not None else question


_DURATION = re.compile(r"(?:\d+|[一二两三四五六七八九十]{1,3}|几)\s*(?:seconds?|secs?|minutes?|mins?|hours?|days?|"
                       r"秒钟?|分钟|小时|个小时|天)(?![A-Za-z])", re.I)


def writes_duration(question: str) -> bool:
    """The question writes a length of time ("the final 10 minutes", "往前推 10 分钟"), quotes aside: a
    window, whatever words surround it."""
    return bool(_DURATION.search(_QUOTED.sub(" ", question)))


def clock(question: str) -> tuple[int, int, int] | None:
    """The first clock time the question writes ("at 14:05", "14:05:30"): (hour, minute, second)."""
    m = _CLOCK.search(question)
    if not m:
        return None
    parts = [int(x) for x in m.group(1).split(":")] + [0]
    return (parts[0], parts[1], parts[2]) if parts[0] < 24 and parts[1] < 60 and parts[2] < 60 else None


def question_phrases(question: str) -> list[str]:
    """Phrases quoted in the question, as written (whitespace collapsed)."""
    out = []
    for m in _QUOTED.finditer(question):
        p = " ".join(next(g for g in m.groups() if g).split())
        if JSON_SAFE.match(p) and len(p.encode()) <= MAX_PHRASE_BYTES:
            out.append(p)
    return list(dict.fromkeys(out))


def question_times(question: str) -> list[str]:
    """Times written in the question, as since/until values: whole timestamps as written, and clock
    times (with the question's date, when it names one)."""
    out: list[str] = []
    covered: list[tuple[int, int]] = []
    question = _ZH_CLOCK.sub(_zh_clock, question)      # "18点10分" is 18:10
    question = re.sub(r"[?？!！)）(（，,。;；、\u300c\u300d\u201c\u201d\"]", " ", question) + " "   # a timestamp ends at them
    for i in range(len(question)):
        if (i and question[i - 1].isalnum()) or any(a <= i < b for a, b in covered):
            continue
        m = match_ts(question, i)
        if m and m.groupdict().get("H") and (m.groupdict().get("b") or m.groupdict().get("m")):
            out.append(m.group(0).strip().rstrip(","))
            covered.append(m.span())
    dates = _DATE.findall(question)
    for m in _CLOCK.finditer(question):
        if not any(a <= m.start() < b for a, b in covered):
            out.append(f"{dates[0]} {m.group(1)}" if len(dates) == 1 else m.group(1))
    if not out:
        return written_window(question)
    return [t for t in dict.fromkeys(out) if JSON_SAFE.match(t)]


def written_window(question: str) -> list[str]:
    """A window the question writes without a clock time, as since and until: a day ("on Dec 05",
    "12月5号那天": that whole day), two days ("from Dec 4 to Dec 5"), an hour ("12月4号晚上8点那个钟头",
    "at 3 pm on Dec 5": that hour of the day, of the newest line's day when it names none)."""
    days, hours = written_days(question), written_hours(question)
    if len(hours) == 1 and len(days) <= 1:
        day = f"{days[0]} " if days else ""
        return [f"{day}{hours[0]:02d}:00:00", f"{day}{hours[0]:02d}:59:59"]
    if 1 <= len(days) <= 2:
        return [days[0], days[-1]]
    return []


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
# a month by its name, capitalised as dates write it ("Dec 05", "December 5th"; not "may 3", "Decommission 5")
_MONTH_NAME = r"Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|" \
              r"Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?"
_DAY_WRITTEN = re.compile(r"(?<![A-Za-z])(" + _MONTH_NAME + r")\.?\s*(\d{1,2})(?:st|nd|rd|th)?(?![\d:])|"
                          r"(?<!\d)(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]|(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")


_ZH_CLOCK = re.compile(r"(凌晨|早上|早晨|上午|中午|下午|傍晚|晚上)?\s*(?<![\d:.])(\d{1,2})\s*[点时]\s*(\d{1,2})\s*分"
                       r"(?:\s*(\d{1,2})\s*秒)?")


def _zh_clock(m: re.Match) -> str:
    """A clock time written in Chinese words as hh:mm[:ss] ("下午3点05分" -> 15:05)."""
    h = int(m.group(2))
    if m.group(1) in ("下午", "傍晚", "晚上") and h < 12 or m.group(1) == "中午" and h < 6:
        h += 12
    return f" {h:02d}:{int(m.group(3)):02d}" + (f":{int(m.group(4)):02d}" if m.group(4) else "") + " "


_HOUR_WRITTEN = re.compile(r"(凌晨|早上|早晨|上午|中午|下午|傍晚|晚上)?\s*(?<![\d:.])(\d{1,2})\s*[点时](?![\d半一二三四五六七八九十]|\s*\d)|"
                           r"(?<![\d:.])(\d{1,2})\s*([ap])\.?m\.?(?![A-Za-z])", re.I)


def written_hours(question: str) -> list[int]:
    """The hours of the day the question writes without minutes ("晚上8点", "20时", "3 pm"), 0-23."""
    out: list[int] = []
    for m in _HOUR_WRITTEN.finditer(question):
        h = int(m.group(2) or m.group(3))
        late = m.group(1) in ("下午", "傍晚", "晚上") or (m.group(4) or "").lower() == "p"
        if late and h < 12 or m.group(1) == "中午" and h < 6:
            h += 12
        elif (m.group(4) or "").lower() == "a" and h == 12:
            h = 0
        if 0 <= h <= 23:
            out.append(h)
    return list(dict.fromkeys(out))


def written_days(question: str) -> list[str]:
    """The calendar days the question writes, as since/until values the store reads as that whole day:
    "2015-10-18" as written, a day without its year ("Dec 05", "December 5th", "12月5号") as "12-05"
    (the stored lines' year)."""
    out: list[str] = []
    for m in _DAY_WRITTEN.finditer(question):
        if m.group(7):
            out.append(f"{m.group(5)}-{m.group(6)}-{m.group(7)}")
            continue
        month = _MONTHS.index(m.group(1).lower()[:3]) + 1 if m.group(1) else int(m.group(3))
        day = int(m.group(2) or m.group(4))
        if 1 <= month <= 12 and 1 <= day <= 31:
            out.append(f"{month:02d}-{day:02d}")
    return list(dict.fromkeys(out))


@dataclass
class Grounding:
    """The filters a question may use (see the module doc)."""
    phrases: list[str] = field(default_factory=list)
    times: list[str] = field(default_factory=list)
    words: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    components: list[str] = field(default_factory=list)
    levels: list[str] = field(default_factory=list)
    recent: bool = False
    ops: list[str] = field(default_factory=list)     # empty: any op
    by: list[str] = field(default_factory=list)      # top_k's fields (empty: any)
    of_words: list[str] = field(default_factory=list)  # stats' "of" (words not naming a unit: "zone 2")
    by_words: list[str] = field(default_factory=list)  # top_k by the value after one of these ("which user")
    content: list[str] = field(default_factory=list)   # the question's content words (lower case, glossary's
                                                       # English for Chinese ones), in its order
    templates: list[str] = field(default_factory=list)   # ids of the kinds of line shown (serve.grounding)
    params: list[str] = field(default_factory=list)      # their parameters' names
    minutes: int | None = None        # the window the question writes ("last 10 minutes"): the call's
    whole: dict[str, str] = field(default_factory=dict)   # host/component written out in full: required

    def key(self) -> tuple:
        return tuple(tuple(x) if isinstance(x, list) else x for x in
                     (self.phrases, self.times, self.words, self.hosts, self.components, self.levels, self.recent,
                      self.ops, self.by, self.of_words, self.by_words, self.templates, self.params, self.minutes,
                      tuple(sorted(self.whole.items()))))


# endings that inflect a word or make a noun of it ("failures", "stopped", "retries")
_ENDINGS = sorted(("e", "s", "es", "d", "ed", "ing", "er", "ers", "or", "ors", "ion", "ions", "ation", "ations",
                   "ure", "ures", "ment", "ments", "al", "ful", "y", "ies", "ied"), key=len, reverse=True)


def _stem(word: str) -> str:
    """The word less its longest ending that leaves PREFIX letters ("failures": "fail"; "stopped": "stop")."""
    for end in _ENDINGS:
        if word.endswith(end) and len(word) - len(end) >= PREFIX:
            stem = word[:-len(end)]
            return stem[:-1] if len(stem) > PREFIX and stem[-1] == stem[-2] and end[0] in "aeiouy" else stem
    return word


def near(a: str, b: str) -> bool:
    """One word, inflected, made a noun or begun by the other: the stem of one (the word less its ending)
    begins the other: "faults" ~ "fault", "failures" ~ "failed", "stop" ~ "stopped", "retry" ~ "retries",
    "allocated" ~ "allocateBlock", "packet" ~ "PacketResponder"; not "contact" ~ "container" (they share
    "conta", and neither's stem begins the other). A dotted or numbered name is only itself."""
    if a == b:
        return True
    if not (a.isalpha() and b.isalpha()) or len(a) < PREFIX or len(b) < PREFIX:
        return False
    return b.startswith(_stem(a)) or a.startswith(_stem(b))


def _parts(value: str) -> list[str]:
    return [p for p in re.split(r"[/\s:()\[\].,_-]+", value.lower()) if len(p) >= 3 and not p.isdigit()]


def _named(value: str, low: str, qwords: set[str], common: set[str]) -> bool:
    """The question names `value`: whole, or by a part no other known value shares ("capper" of
    "line3/capper"; not "apache" of "org.apache.hadoop.X")."""
    if re.search(r"(?<![A-Za-z0-9_])" + re.escape(value.lower()) + r"(?![A-Za-z0-9_])", low):   # (Han text around
                                                                                                # a name: no \w)
        return True
    return any(p in qwords and p not in common and p not in _NOT_CONTENT for p in _parts(value))


def _shared_parts(values: Sequence[str]) -> set[str]:
    seen: dict[str, int] = {}
    for v in values:
        for p in set(_parts(v)):
            seen[p] = seen.get(p, 0) + 1
    return {p for p, n in seen.items() if n > 1}


def is_error(level: str) -> bool:
    """A stored level of the error class or worse ("ERROR", "FATAL", "E", "crit")."""
    return _RANK.get(_canon(level.lower()), 9) <= _RANK["error"]


def _canon(level: str) -> str:
    """A stored level's class: its word's ("warn": warning), or a level letter's ("e": error)."""
    return _LEVELS.get(level, _LETTER_LEVELS.get(level.upper(), level) if len(level) == 1 else level)


def absent_levels(question: str, levels: Sequence[str]) -> list[str]:
    """Level words written as a log writes a level ("WARN", "ERROR-level") that name no stored level
    (`levels`), as written: a condition no stored line meets ("anything at WARN or ERROR?" over a log
    of INFO lines is answered by no line, not by every line)."""
    have = {lv.lower() for lv in levels} | {_canon(lv.lower()) for lv in levels}
    question = _QUOTED.sub(" ", question)
    out = [m.group(0) for m in _LEVEL_WORD.finditer(question)
           if (low := m.group(0).lower()) in _LEVELS and (m.group(0).isupper() or _LEVEL_AFTER.match(question, m.end()))
           and low not in have and _LEVELS[low] not in have]
    return list(dict.fromkeys(out))


def _levels(question: str, levels: Sequence[str]) -> tuple[list[str], set[str]]:
    """(store levels the question names, the question words that named them). A level word written as
    the log writes a level ("SEVERE", "ERROR level", "WARN 级别", logcat's "W level") is that level;
    a word for a kind of problem ("errors", "warnings", 错误, 告警) is every store level of that kind:
    errors are error or worse (BGL's SEVERE, FATAL, FAILURE too), warnings the warning class."""
    have = {lv.lower(): lv for lv in levels}
    asked: list[tuple[str, str, bool]] = []          # (word, level word, exact)
    for m in _LEVEL_WORD.finditer(question):         # in the question's order
        w = m.group(0).lower()
        base = w if w in _LEVELS else w[:-1] if w.endswith("s") and w[:-1] in _LEVELS else None
        if base is not None and not any(x[0] == w for x in asked):
            exact = m.group(0).isupper() or bool(_LEVEL_AFTER.match(question, m.end()))
            if exact or base not in _WRITTEN_ONLY:
                asked.append((w, base, exact))
    asked += sorted(((k, c, False) for k, c in _ZH_LEVELS.items() if k in question),
                    key=lambda kc: question.index(kc[0]))
    asked += [(m.group(m.lastindex), _LETTER_LEVELS[m.group(m.lastindex)], True) for m in _LETTER_LEVEL.finditer(question)
              if m.group(m.lastindex) in _LETTER_LEVELS]
    out: list[str] = []
    used: set[str] = set()
    for w, base, exact in asked:
        canon = _LEVELS.get(base, base)
        if exact and (base in have or canon in have or w.lower() in have):     # the log's own word ("F") first
            hit = [have[w.lower()] if w.lower() in have else have[base] if base in have else have[canon]]
        else:
            rank = _RANK.get(canon, 9)
            hit = [lv for low, lv in have.items() if (_RANK.get(_canon(low), 9) <= rank
                                                      if canon in _WORSE_TOO else _canon(low) == canon)]
        if hit:
            used.add(w)
        out += [lv for lv in hit if lv not in out]
    return out, used


_FIRST = re.compile(r"\b(?:first|earliest)\b|第一|最早|首次", re.I)    # 第一次, 第一个, 第一条
# a start asks for the first line only of a question that asks when ("When did stage 29.0 kick off?");
# "how many tasks started", "几个 task 开始跑了" count the starts
_START = re.compile(r"\b(?:start(?:ed|s)?|beg(?:in|an|un|ins)|kick(?:ed|s)? off)\b|开始|启动", re.I)
WHEN = re.compile(r"\bwhen\b|\bwhat time\b|\bat what\b|什么时候|何时|几点|哪一天|时间", re.I)   # asks for a time
_LAST = re.compile(r"\b(?:last|latest|most recent(?:ly)?|newest|final)\b|最后|最近一次|最新", re.I)


def which_end(question: str) -> str | None:
    """"first" or "last" when the question asks for only that end of a first/last result (an answer
    shown both confuses them), else None."""
    question = _QUOTED.sub(" ", question)
    first = bool(_FIRST.search(question) or WHEN.search(question) and _START.search(question))
    last = bool(_LAST.search(question))
    return "first" if first and not last else "last" if last and not first else None


def _of_words(question: str, words: Sequence[str]) -> list[str]:
    """The words stats may take the number after: with a numbered name in the question ("heater zone 2
    temperature"), the words after it (the number after "heater" or "zone" is the name's own)."""
    names = list(re.finditer(r"(?:[A-Za-z][\w-]*\s+|[\u4e00-\u9fff]\s*)\d+(?:\b|\s*号)", question))
    if not names:
        return list(words)
    rest = question[names[-1].end():]
    after = ({w.lower() for w in _WORD.findall(rest)} | set(english_terms(rest))) - _NOT_CONTENT
    return [w for w in words if any(near(w.lower(), q) for q in after)]


def ground(question: str, hosts: Sequence[str], components: Sequence[str], levels: Sequence[str],
           words: Sequence[str]) -> Grounding:
    """The question's filters among the store's known values and log words."""
    g = Grounding(phrases=question_phrases(question), times=question_times(question))
    # several quoted: the longest names the lines (the text filter); a quoted word beside it names a
    # value in them ('the largest value after "state" in "... error state" lines'): stats' `of`
    longest = max(g.phrases, key=len, default=None)
    quoted_words = [p for p in g.phrases if " " not in p and p != longest]
    g.phrases = [longest] if longest is not None else []
    question = _QUOTED.sub(" ", question)      # a quoted phrase is message text: it names no level or op
    named_in = question.lower()                # hosts and components: before the log's name goes ("did the
    named_words = {w.lower() for w in _WORD.findall(question)}                       # filler log")
    # "in the Hadoop log": the log's name, not what its lines say; "warning 日志" are lines of a level
    question = _LOG_NAME.sub(lambda m: m.group(0) if _levels(m.group(0), levels)[0] else " ", question)
    m = _ZH_SUBJECT.match(question)
    if m and m.group(1).lower() not in {w.lower() for w in words} and not _levels(m.group(1), levels)[0]:
        question = question[m.end():]          # "Hadoop 在 ... 之间": the log's name (not one of its words)
    span = span_s(question)
    window = {n for m in _DURATION.finditer(question) for n in re.findall(r"\d+", m.group(0))} if span else set()
    question = without_window(question)
    latin = {w.lower() for w in _WORD.findall(question)}
    g.levels, level_words = _levels(question, levels)
    for w in _ZH_LEVELS:                       # a Chinese level word names a level (or nothing), not a text
        question = question.replace(w, " ")
    gloss = english_terms(question)            # a Chinese question's words, in the log's language
    qwords = latin | set(gloss)
    content = {w for w in qwords if w not in _NOT_CONTENT and w not in level_words}
    g.content = [w for w in dict.fromkeys([*(m.lower() for m in _WORD.findall(question)), *gloss]) if w in content]
    content -= _FIELD_WORDS                    # "which station": a field's name, not what a line says
    if level_words:                            # "ERROR level lines": "level" names no text either
        content.discard("level")
        content.discard("levels")
    if content:
        g.words = [w for w in words if any(near(w.lower(), q) for q in content)]
    elif not latin and len(han_content(question)) >= 2:
        g.words = [w for w in words if w not in window]   # Chinese beyond the glossary: the model translates
    # else: the question names nothing a line says (a time window, a level): no text filter
    g.of_words = _of_words(question, g.words)
    qwords |= named_words
    g.hosts = [h for h in hosts if _named(h, named_in, qwords, _shared_parts(hosts))]
    g.components = [c for c in components if _named(c, named_in, qwords, _shared_parts(components))]
    for key, values in (("host", g.hosts), ("component", g.components)):
        full = [v for v in values if len(v) >= 3 and v.lower() not in _NOT_CONTENT and
                re.search(r"(?<![A-Za-z0-9_.-])" + re.escape(v.lower()) + r"(?![A-Za-z0-9_-])", named_in)]
        full = [v for v in full if not any(v != w and v.lower() in w.lower() for w in full)]   # "dfs.DataNode"
        if len(full) == 1:                     # inside "dfs.DataNode$PacketResponder" is not named; the question
                                               # writes one of them out: the lines are its
            g.whole[key] = full[0]
    names = {p for v in (*g.hosts, *g.components) for p in _parts(v)}
    g.of_words = [w for w in g.of_words if w.lower() not in names]   # "capper torque": the station, not a measure
    log_words = {w.lower(): w for w in words}
    g.of_words = [*dict.fromkeys([log_words[q.lower()] for q in quoted_words if q.lower() in log_words] + g.of_words)]
    # a pair of written times is the window ("18:03:00 到 18:03:59 这一分钟里"): its 分钟 asks no recent one
    g.recent = span is not None or (bool(_RECENT.search(question)) and len(g.times) < 2)
    if span is not None:
        g.minutes = max(1, math.ceil(span / 60))
    return g

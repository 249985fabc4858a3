"""Operator questions over a Loghub 2k sample in three English and three Chinese
wordings; expected answers computed from the structured CSV, values picked by rules
and cross-checked against the raw lines (grep and CSV grouping must agree).
Written without knowledge of the appliance's question parser.

    python -m tools.bench.qa_wordings --system HDFS [--data DIR]
"""
from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from collections import Counter
from itertools import permutations
from decimal import Decimal
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[2].parent / "shared/data/loghub"

LEVEL_COLS = ("Level", "Type", "Severity")
COMP_COLS = ("Component", "Process", "Program", "Node")
TIME_COLS = ("Time", "Timestamp", "Date")
CONTENT_COLS = ("Content", "Message")
MONTHS = {m: i for i, m in enumerate(
    "jan feb mar apr may jun jul aug sep oct nov dec".split(), 1)}
NUM_RX = re.compile(r"-?\d+(?:\.\d+)?$")

# ---------------------------------------------------------------- wordings
# {P} event phrase, {V} parameter value, {K} key token, {X} label context,
# {L} level, {C} component, {W} optional condition clause (en/zh).
WORDINGS = {
    "count-level": {
        "en": ["How many log lines have the level {L}?", "count of {L} lines?",
               "hey, how many {L} messages are in this log?"],
        "zh": ["日志中级别为 {L} 的行一共有多少条？", "{L} 级别日志条数",
               "帮我数一下这份日志里有几条 {L}？"]},
    "count-component": {
        "en": ["How many log lines were written by the component {C}?",
               "{C}: number of lines?", "how many entries came from {C}?"],
        "zh": ["组件 {C} 一共输出了多少行日志？", "{C} 的日志行数",
               "{C} 这个模块打了几条日志？"]},
    "top-component": {
        "en": ["Which component produced the most log lines?",
               "top component by line count?", "who's the noisiest component in this log?"],
        "zh": ["哪个组件输出的日志行数最多？", "日志量最大的组件", "哪个模块刷日志刷得最多？"]},
    "count-param": {
        "en": ['How many "{P}" lines mention {V}?', '"{P}" lines with {V}: count?',
               'how many of the "{P}" messages involve {V}?'],
        "zh": ['包含“{P}”且涉及 {V} 的日志有多少行？', '"{P}" 里带 {V} 的行数',
               '{V} 相关的“{P}”记录有几条？']},
    "lookup": {
        "en": ['In the "{P}" line that mentions {K}, what is the {X}?',
               '"{P}" / {K}: {X}?',
               'there\'s a "{P}" line with {K} in it - what\'s the {X} there?'],
        "zh": ['提到 {K} 的那条“{P}”日志里，{X}是什么？', '"{P}" {K} 那行的{X}',
               '帮我查一下 {K} 那条 "{P}" 日志，{X}是啥？']},
    "first-time": {
        "en": ['When did "{P}" first appear in the log?', 'first occurrence time of "{P}"?',
               'what time did we first see "{P}"?'],
        "zh": ['“{P}”第一次出现是在什么时间？', '"{P}" 首次出现时间',
               '"{P}" 最早是几点开始报的？']},
    "last-time": {
        "en": ['When was the last "{P}" message logged?', 'time of last "{P}"?',
               "when's the most recent \"{P}\" in here?"],
        "zh": ['最后一条“{P}”日志是什么时间记录的？', '"{P}" 最后一次出现时间',
               '"{P}" 最后一次是几点报的？']},
    "max-param": {
        "en": ['Among the "{P}" lines, what is the largest {X}?',
               'max {X} in "{P}" lines?',
               'what\'s the biggest {X} we saw in the "{P}" messages?'],
        "zh": ['所有“{P}”日志中，{X}最大是多少？', '"{P}" 日志里{X}的最大值',
               '"{P}" 那些日志里{X}最大到多少了？']},
    "sum-param": {
        "en": ['What is the total of the {X} over all "{P}" lines{W}?',
               'sum of {X} in "{P}" lines{W}?',
               'if you add up the {X} in the "{P}" messages{W}, what do you get?'],
        "zh": ['所有{W}“{P}”日志中，{X}加起来是多少？', '{W}"{P}" 日志里{X}的总和',
               '把{W}"{P}" 日志里{X}都加起来，一共多少？']},
}
COND = {"en": " that mention {V}", "zh": "包含 {V} 的"}


# ---------------------------------------------------------------- judging
_NUM_TOKEN = re.compile(
    r"(?<![A-Za-z0-9_.])-?(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?")


def _numbers(text: str) -> list[Decimal]:
    return [Decimal(t.replace(",", "")) for t in _NUM_TOKEN.findall(text)]


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", str(s)).strip().casefold()


def judge(answer: str, check: dict) -> bool:
    """True when the answer satisfies the check (see module doc)."""
    if "number" in check:
        want = Decimal(str(check["number"]))
        return any(n == want for n in _numbers(answer))
    a = _norm(answer)
    if "any_of" in check:
        return any(_norm(s) in a for s in check["any_of"])
    if "all_of" in check:
        return all(_norm(s) in a for s in check["all_of"])
    raise ValueError(f"unknown check {check!r}")


# ---------------------------------------------------------------- loading
def _col(header, names):
    low = {h.lower(): h for h in header}
    for n in names:
        if n.lower() in low:
            return low[n.lower()]
    return None


def _tpl_regex(tpl: str):
    # literal parts with flexible whitespace, one lazy group per <*>
    parts = []
    for lit in tpl.split("<*>"):
        parts.append("".join(r"\s*" if p.isspace() else re.escape(p)
                             for p in re.split(r"(\s+)", lit) if p))
    return re.compile(r"^\s*" + "(.*?)".join(parts) + r"\s*$", re.S)


class _Log:
    def __init__(self, data_dir: Path, system: str):
        base = Path(data_dir) / system
        with open(base / f"{system}_2k.log_structured.csv", newline="",
                  encoding="utf-8", errors="replace") as f:
            reader = csv.DictReader(f)
            self.header = list(reader.fieldnames or [])
            # short rows give None; extra cells land under the None key
            self.rows = [{k: v or "" for k, v in r.items() if k is not None}
                         for r in reader]
        h = self.header
        self.content = _col(h, CONTENT_COLS)
        self.eid, self.tpl = _col(h, ("EventId",)), _col(h, ("EventTemplate",))
        self.time = _col(h, TIME_COLS)
        raw = (base / f"{system}_2k.log").read_text(
            encoding="utf-8", errors="replace").split("\n")
        raw = [r.rstrip("\r") for r in raw]
        if raw and raw[-1] == "":
            raw.pop()
        if len(raw) != len(self.rows):  # fall back to the parsed content
            raw = [r.get(self.content) or "" for r in self.rows]
        self.raw, self.raw_lc = raw, [r.lower() for r in raw]
        self.events = self._events()

    def _events(self):
        ev = {}
        if not (self.eid and self.tpl and self.content):
            return ev
        for i, r in enumerate(self.rows):
            e = ev.setdefault(r[self.eid], {"id": r[self.eid], "tpl": r[self.tpl],
                                            "idx": [], "params": []})
            e["idx"].append(i)
        for e in ev.values():
            e["nparams"] = e["tpl"].count("<*>")
            rx = _tpl_regex(e["tpl"]) if e["nparams"] <= 30 else None  # backtracking
            for i in e["idx"]:
                m = rx.match(self.rows[i][self.content]) if rx else None
                e["params"].append([g.strip() for g in m.groups()] if m else None)
            e["aligned"] = all(p is not None for p in e["params"])
        # biggest first; ties keep first-seen order
        return dict(sorted(ev.items(), key=lambda kv: -len(kv[1]["idx"])))

    def grep(self, text: str) -> list[int]:
        return [i for i, line in enumerate(self.raw_lc) if text.lower() in line]

    def token_lines(self, value: str, idx=None) -> list[int]:
        rx = re.compile(r"(?<![A-Za-z0-9_.\-])" + re.escape(value)
                        + r"(?![A-Za-z0-9_\-]|\.[A-Za-z0-9])", re.I)
        low = value.lower()  # cheap substring filter before the regex
        idx = range(len(self.raw)) if idx is None else idx
        return [i for i in idx if low in self.raw_lc[i] and rx.search(self.raw[i])]


# ---------------------------------------------------------------- helpers
def _trim(chunk: str, glued_left: bool, glued_right: bool) -> str:
    # drop word fragments glued to a neighbouring <*> ("blk_", "core.")
    if glued_right and not chunk[-1:].isspace():
        chunk = re.sub(r"\S*$", "", chunk)
    if glued_left and not chunk[:1].isspace():
        chunk = re.sub(r"^\S*", "", chunk)
    for op, cl in ("()", "[]"):  # cut at an unbalanced bracket
        if chunk.count(op) > chunk.count(cl):
            chunk = chunk[:chunk.rindex(op)]
        if chunk.count(cl) > chunk.count(op):
            chunk = chunk[chunk.index(cl) + 1:]
    chunk = re.sub(r"^[\s\]\)}:,;=/.|>*-]+", "", chunk)
    return re.sub(r"[\s\[\({:,;=/|<.*-]+$", "", chunk)


def _chunks(tpl: str) -> list[str]:
    parts = tpl.split("<*>")
    return [_trim(c, i > 0, i < len(parts) - 1) for i, c in enumerate(parts)]


def _phrase(log: _Log, e) -> str | None:
    """Longest literal chunk (two words or more) of the template that selects
    exactly this event's lines in the raw log."""
    if "phrase" in e:
        return e["phrase"]
    e["phrase"] = None
    for c in sorted(set(_chunks(e["tpl"])), key=len, reverse=True):
        if len(c) < 8 or not re.search(r"[A-Za-z]{3}", c) or '"' in c or "  " in c:
            continue
        if " " not in c and e["nparams"]:
            continue
        if log.grep(c) == e["idx"]:
            e["phrase"] = c
            break
    return e["phrase"]


def _prefix(e, pos: int) -> str:
    """Literal glued to the left of a parameter (blk_, core.) - part of its token."""
    m = re.search(r"[A-Za-z]\w*[_.]?$", e["tpl"].split("<*>")[pos])
    return m.group(0) if m else ""


# words around a number that say it is a quantity (worth a max/sum) or an id
QUANTITY = {"size", "bytes", "byte", "ms", "seconds", "secs", "microseconds",
            "milliseconds", "timeout", "total", "count", "tried", "retries",
            "generated", "memory", "free", "exceptions", "interrupts", "took",
            "boot", "init", "finish", "length", "duration", "elapsed", "time"}
IDWORDS = {"id", "pid", "tid", "uid", "euid", "child", "task", "stage", "slot",
           "attempt", "job", "container", "part", "block", "application",
           "session", "thread", "version", "piece", "rdd", "broadcast"}
_WORD = r"[A-Za-z][\w.'-]*"
STOP = {"from", "to", "for", "of", "in", "at", "by", "on", "with", "is", "as",
        "the", "a", "an", "and", "or", "was", "be"}


def _label(e, pos: int):
    """(side, words) naming a parameter by the literal text next to it:
    ("after", "size") or ("before", "bytes"); None when ambiguous."""
    if _prefix(e, pos):
        return None
    parts = e["tpl"].split("<*>")
    cands = []
    after = re.match(rf"\s+((?:{_WORD}\s+){{0,3}}{_WORD})", parts[pos + 1])
    if after:  # "<*> floating point alignment exceptions", "<*> bytes"
        words = after.group(1).split()
        for k, w in enumerate(words):
            if w.lower().strip(".") in QUANTITY:  # "bytes", else "bytes sent"
                cands += [("before", " ".join(words[:n]).strip("."))
                          for n in (k + 1, k + 2) if n <= len(words)]
                break
    lit = re.sub(r"[\s\[\](){}/:=,;#'\"<>-]+$", "", parts[pos])
    m = re.search(rf"(?:{_WORD}\s+){{0,2}}{_WORD}$", lit)
    if m:  # shortest unambiguous tail: "size" rather than "of size"
        words = m.group(0).strip(".").split()
        for k in range(1, len(words) + 1):
            if k == 1 and (words[-1].lower() in STOP or len(words[-1]) < 3):
                continue
            cands.append(("after", " ".join(words[-k:])))
    for side, lab in cands:
        if len(lab) >= 2 and e["tpl"].count(lab) == 1:
            return side, lab
    return None


def _kind_of(e, pos: int) -> int:
    """2 quantity, 1 neutral, 0 id-like (by the words around the parameter)."""
    parts = e["tpl"].split("<*>")
    near = re.findall(r"[a-z]+", (parts[pos][-24:] + " " + parts[pos + 1][:14]).lower())
    before = re.findall(r"[a-z]+", parts[pos][-24:].lower())
    if before and before[-1] in IDWORDS:
        return 0
    return 2 if QUANTITY & set(near) else 1


def _describe(label, lang: str, plural: bool = False) -> str:
    side, lab = label
    if lang == "en":
        s = "s" if plural else ""
        return f'value{s} after "{lab}"' if side == "after" else f'number{s} before "{lab}"'
    return f"“{lab}”后面的值" if side == "after" else f"“{lab}”前面的数"


def _values(e, pos: int) -> list[str]:
    return [p[pos] for p in e["params"]]


def _hms(t: str) -> str | None:
    m = re.search(r"(?<!\d)(\d{2})[:.](\d{2})[:.](\d{2})(?!\d)", t)
    if not m:
        m = re.fullmatch(r"(\d{2})(\d{2})(\d{2})", t.strip())
    return ":".join(m.groups()) if m else None


def _time_key(log: _Log, row) -> tuple:
    """Sortable key from the date/time columns: numbers, month names as numbers."""
    text = " ".join(row[c] for c in log.header
                    if c.lower() in ("timestamp", "year", "date", "month", "day", "time"))
    toks = re.findall(r"\d+|[A-Za-z]{3,}", text)
    return tuple(int(t) if t.isdigit() else MONTHS[t[:3].lower()] for t in toks
                 if t.isdigit() or t[:3].lower() in MONTHS)


def _time_answers(log: _Log, i: int) -> list[str]:
    """The time as written in the line, plus HH:MM:SS when that differs."""
    t = log.rows[i][log.time].strip()
    return [t] + [h for h in [_hms(t)] if h and h != t]


def _num_out(d: Decimal):
    return int(d) if d == d.to_integral_value() else float(d)


def _comp_name(v: str) -> str:
    # "3888:QuorumCnxManager$Listener" -> "QuorumCnxManager$Listener"
    tail = v.rsplit(":", 1)[-1]
    return tail if ":" in v and re.fullmatch(r"[A-Za-z_][\w$.]*", tail) else v


def _order(events, used):
    """Events not yet asked about first, then the rest (both biggest first)."""
    evs = list(events)
    return [e for e in evs if e["id"] not in used] + [e for e in evs if e["id"] in used]


# ---------------------------------------------------------------- kinds
def _counts(log: _Log, names, norm=str.strip):
    """Value counts of the first column among names with more than one value."""
    for name in names:
        col = _col(log.header, (name,))
        cnt = Counter(norm(r[col].strip()) for r in log.rows) if col else Counter()
        cnt.pop("", None)
        if len(cnt) > 1:
            return cnt
    return None


def _q_level(log: _Log, used):
    cnt = _counts(log, LEVEL_COLS)
    if not cnt:
        return None
    lvl, n = cnt.most_common()[1]  # 2nd most frequent level
    return {"L": lvl}, {"number": n}


def _components(log: _Log):
    return _counts(log, COMP_COLS, _comp_name)


def _q_count_component(log: _Log, used):
    cnt = _components(log)
    if not cnt:
        return None
    names = list(cnt)
    for comp, n in cnt.most_common()[1:]:
        # a name inside another name, or one that shows up elsewhere, is ambiguous
        if n < 2 or any(comp in o for o in names if o != comp):
            continue
        if len(log.token_lines(comp)) == n:
            return {"C": comp}, {"number": n}
    return None


def _q_top_component(log: _Log, used):
    cnt = _components(log)
    if not cnt:
        return None
    (top, n1), (_, n2) = cnt.most_common(2)
    return ({}, {"any_of": [top]}) if n1 > n2 else None


def _q_count_param(log: _Log, used, fresh_only: bool = False):
    first = None
    for e in _order(log.events.values(), used):
        if fresh_only and e["id"] in used:
            continue
        if not e["aligned"] or len(e["idx"]) < 3 or not _phrase(log, e):
            continue
        cands = []
        for pos in range(e["nparams"]):
            pre = _prefix(e, pos)
            vals = Counter(pre + v for v in _values(e, pos))
            if len(vals) < 2:
                continue
            for v, n in vals.items():
                if len(v) < 3 or not re.search(r"\w", v) or " " in v:
                    continue
                if v.lower() in e["tpl"].lower() or len(log.token_lines(v, e["idx"])) != n:
                    continue
                # prefer names/addresses over bare numbers, repeated values, and
                # values that a plain grep over the whole log would over-count
                outside = len(log.token_lines(v)) > n
                cands.append((bool(NUM_RX.match(v)), n < 2, not outside, -n, v, e))
        if cands:
            best = min(cands, key=lambda c: c[:5])
            if first is None or best[:2] < first[:2]:
                first = best
            if first[:2] == (False, False):
                break
    if not first:
        return None
    *_, neg_n, v, e = first
    used.add(e["id"])
    return {"P": e["phrase"], "V": v}, {"number": -neg_n}


def _q_lookup(log: _Log, used):
    """A parameter read from the one line of an event that carries a key value."""
    best = None
    for e in _order(log.events.values(), used):
        if not e["aligned"] or e["nparams"] < 2 or not _phrase(log, e):
            continue
        for q, p in permutations(range(e["nparams"]), 2):
            if not (_label(e, q) and _kind_of(e, q) and len(set(_values(e, q))) > 1):
                continue
            pre = _prefix(e, p)
            cnt = Counter(pre + v for v in _values(e, p))
            keys = [(i, pre + ps[p], ps[q]) for i, ps in zip(e["idx"], e["params"])
                    if cnt[pre + ps[p]] == 1 and len(ps[p]) >= 4 and " " not in ps[p]
                    and len(ps[q]) >= 2 and ps[p].lower() not in e["tpl"].lower()
                    and ps[q].lower() not in ps[p].lower() and ps[p].lower() not in ps[q].lower()]
            for i, key, w in keys[:40]:  # enough keys looked at for this pair
                if log.token_lines(key, e["idx"]) != [i]:
                    continue
                # quantity targets, keys unique in the whole log, named keys
                score = (_kind_of(e, q), log.grep(key) == [i], bool(re.search("[A-Za-z]", key)))
                if best is None or score > best[0]:
                    best = (score, e, {"P": e["phrase"], "K": key, "X": _label(e, q)},
                            {"any_of": list(dict.fromkeys([w, w.replace(" ", "")]))})
    if not best:
        return None
    used.add(best[1]["id"])
    return best[2], best[3]


def _q_time(log: _Log, used, last: bool):
    if not log.time:
        return None
    picks = []
    evs = [e for e in _order(log.events.values(), used)
           if len(e["idx"]) >= 3 and _phrase(log, e)]
    for e in sorted(evs, key=lambda e: len(e["phrase"]) < 12):  # telling phrases first
        keys = [_time_key(log, log.rows[j]) for j in e["idx"]]
        i = e["idx"][-1 if last else 0]
        j = e["idx"][keys.index(max(keys) if last else min(keys))]
        ans = _time_answers(log, i)
        # file order and clock order disagree: accept both, but prefer other events
        extra = [a for a in _time_answers(log, j) if a not in ans]
        picks.append((bool(extra), e, ans + extra))
    if not picks:
        return None
    _, e, ans = min(picks, key=lambda t: t[0])
    used.add(e["id"])
    return {"P": e["phrase"]}, {"any_of": ans}


def _numeric_slots(log: _Log, need_quantity: bool):
    """(event, pos) whose values are all plain numbers, labelable, not ids;
    quantities (sizes, counts, durations) first, then bigger events."""
    out = []
    for e in log.events.values():
        if not e["aligned"] or len(e["idx"]) < 3 or not _phrase(log, e):
            continue
        for pos in range(e["nparams"]):
            vals = _values(e, pos)
            if not all(NUM_RX.match(v) and len(v.lstrip("-")) <= 12 for v in vals):
                continue
            kind = _kind_of(e, pos)
            if len(set(vals)) >= 2 and _label(e, pos) and kind >= (2 if need_quantity else 1):
                out.append((-kind, -len(e["idx"]), e, pos))
    return [(e, pos) for *_, e, pos in sorted(out, key=lambda t: t[:2])]


def _q_max(log: _Log, used):
    slots = _numeric_slots(log, need_quantity=False)
    if not slots:
        return None
    e, pos = slots[0]
    used.add(e["id"])
    best = max(_values(e, pos), key=Decimal)
    return {"P": e["phrase"], "X": _label(e, pos)}, {"number": _num_out(Decimal(best))}


def _condition(log: _Log, e, pos):
    """Most frequent value of another parameter that picks a proper subset."""
    best = None
    for q in range(e["nparams"]):
        if q == pos:
            continue
        pre = _prefix(e, q)
        for v, n in Counter(pre + x for x in _values(e, q)).items():
            if not (2 <= n < len(e["idx"])) or len(v) < 3 or " " in v:
                continue
            if NUM_RX.match(v) or v.lower() in e["tpl"].lower():
                continue
            sel = [i for i, p in zip(e["idx"], e["params"]) if pre + p[q] == v]
            if log.token_lines(v, e["idx"]) == sel and (best is None or n > best[1]):
                best = (v, n, sel)
    return best


def _q_sum(log: _Log, used):
    """Sum of a quantity (sizes, counts, ms), under a condition when one exists."""
    slots = _numeric_slots(log, need_quantity=True)
    if not slots:
        return None
    e, pos = min(slots, key=lambda s: (s[0]["id"] in used, _condition(log, *s) is None))
    used.add(e["id"])
    cond = _condition(log, e, pos)
    pick = set(cond[2]) if cond else set(e["idx"])
    total = sum((Decimal(p[pos]) for i, p in zip(e["idx"], e["params"]) if i in pick),
                Decimal(0))
    fields = {"P": e["phrase"], "X": _label(e, pos), "W": cond[0] if cond else None}
    return fields, {"number": _num_out(total)}


KINDS = [
    ("count-level", _q_level),
    ("count-component", _q_count_component),
    ("top-component", _q_top_component),
    ("count-param", _q_count_param),
    ("lookup", _q_lookup),
    ("first-time", lambda log, used: _q_time(log, used, last=False)),
    ("last-time", lambda log, used: _q_time(log, used, last=True)),
    ("max-param", _q_max),
    ("sum-param", _q_sum),
]


def _render(kind: str, lang: str, n: int, fields: dict) -> str:
    f = dict(fields)
    cond = f.pop("W", None)
    f["W"] = COND[lang].format(V=cond) if cond else ""
    if "X" in f:
        f["X"] = _describe(f["X"], lang, plural=kind == "sum-param")
    return WORDINGS[kind][lang][n].format(**f).strip()


MIN_BASE = 7  # systems short of kinds get extra count-param questions


def questions(data_dir: Path, system: str) -> list[dict]:
    """All base questions for one system, each in en/zh wordings 1-3."""
    log = _Log(Path(data_dir), system)
    used: set = set()
    bases = []  # (kind, n, fields, check)
    for kind, make in KINDS:
        got = make(log, used)
        if got:
            bases.append((kind, 1) + got)
    n = 1
    while len(bases) < MIN_BASE:
        got = _q_count_param(log, used, fresh_only=True)
        if not got or any(b[2] == got[0] for b in bases):
            break
        n += 1
        bases.append(("count-param", n) + got)
    out = []
    for kind, n, fields, check in bases:
        for lang in ("en", "zh"):
            for w in range(3):
                out.append({"system": system, "id": f"{system}-{kind}-{n}",
                            "kind": kind, "lang": lang, "wording": w + 1,
                            "question": _render(kind, lang, w, fields),
                            "check": check})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--system", required=True)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    a = ap.parse_args(argv)
    for q in questions(a.data, a.system):
        print(json.dumps(q, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())

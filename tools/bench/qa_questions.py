"""The QA benchmark's questions (issue 23): operator questions over the 8 Loghub systems in
shared/data/loghub and the appliance's demo line, with expected answers computed here from the data,
never typed by hand.

Every question template is generic: the field values it asks about (the most frequent component, a
template with a numeric parameter, a time window, ...) are picked from each system's structured CSV
by rules, so the same generator runs unchanged over other Loghub systems (the held-out set).

A question is a dict: system, lang ("en" | "zh"), kind (lookup, count, top-k, extreme, first-last,
time-window, why), id, question, check. A check has any of:
  number   the answer must contain this number as a token (counts: the exact integer)
  any_of   at least one of these substrings (case-insensitive)
  all_of   every one of these substrings (case-insensitive)
`judge(answer, check)` applies it; `is_loop(answer)` is the degenerate-repetition rule (both in qa_judge.py).

    python tools/bench/qa_questions.py [--data DIR] [--out FILE]   # prints the questions as JSON
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "loghub"
SYSTEMS = ("Apache", "BGL", "HDFS", "Hadoop", "Linux", "OpenSSH", "Spark", "Zookeeper")
DEMO = "demo"
KINDS = ("lookup", "count", "top-k", "extreme", "first-last", "time-window", "why")
LEVEL_WORDS = {"trace", "debug", "info", "notice", "warn", "warning", "error", "err", "fatal", "critical",
               "crit", "alert", "emerg", "severe", "fine"}
ERROR_WORDS = re.compile(r"fail|error|invalid|exception|refused|denied|timeout|timed out|unable|cannot|lost|"
                         r"broken|interrupted|break-in|illegal|fatal", re.IGNORECASE)
STOP_WORDS = {"while", "there", "which", "would", "could", "should", "about", "after", "before", "their", "other",
              "these", "those", "error", "errors", "failed", "failure", "warning", "because", "state", "retry",
              "exception", "exceptions"}
ZH_EVERY = 3                  # every 3rd question of a system (rotated by system) is asked in Chinese


# --- the data ---------------------------------------------------------------------------------------

def load_system(data: Path, system: str) -> tuple[list[str], list[dict]]:
    """(raw lines, structured rows) of <data>/<system>/<system>_2k.log(_structured.csv), aligned."""
    d = data / system
    raw = (d / f"{system}_2k.log").read_text(encoding="utf-8", errors="replace").splitlines()
    with open(d / f"{system}_2k.log_structured.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    raw = [ln for ln in raw if ln.strip()]
    if len(raw) != len(rows):
        raise ValueError(f"{system}: {len(raw)} raw lines but {len(rows)} structured rows")
    return raw, rows


_MONTHS = {m: i + 1 for i, m in enumerate(["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"])}
# (regex on the raw line, has_year, builder) -- the header shapes of the Loghub systems, tried in order.
_TIME_SHAPES = [
    (re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T-](\d{2})[:.](\d{2})[:.](\d{2})"), True,
     lambda g: (int(g[0]), int(g[1]), int(g[2]), int(g[3]), int(g[4]), int(g[5]))),
    (re.compile(r"^\[\w{3} (\w{3}) (\d{1,2}) (\d{2}):(\d{2}):(\d{2}) (\d{4})\]"), True,
     lambda g: (int(g[5]), _MONTHS[g[0]], int(g[1]), int(g[2]), int(g[3]), int(g[4]))),
    (re.compile(r"^(\d{2})/(\d{2})/(\d{2}) (\d{2}):(\d{2}):(\d{2})"), True,
     lambda g: (2000 + int(g[0]), int(g[1]), int(g[2]), int(g[3]), int(g[4]), int(g[5]))),
    (re.compile(r"^(\d{2})(\d{2})(\d{2}) (\d{2})(\d{2})(\d{2}) "), True,
     lambda g: (2000 + int(g[0]), int(g[1]), int(g[2]), int(g[3]), int(g[4]), int(g[5]))),
    (re.compile(r"^([A-Z][a-z]{2}) +(\d{1,2}) (\d{2}):(\d{2}):(\d{2})"), False,
     lambda g: (2000, _MONTHS[g[0]], int(g[1]), int(g[2]), int(g[3]), int(g[4]))),
]


def line_time(raw: str) -> tuple[datetime, bool, str] | None:
    """(time, has_year, the header text it was read from) of a raw line, or None."""
    for rx, has_year, build in _TIME_SHAPES:
        m = rx.search(raw[:80])
        if m:
            return datetime(*build(m.groups())), has_year, m.group(0)
    return None


def render_time(t: datetime, has_year: bool) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S") if has_year else t.strftime("%b %d %H:%M:%S")


def clock_forms(t: datetime, header: str) -> list[str]:
    """Ways an answer may write a line's time of day: 20:36:15, and the log's own 20.36.15 / 203615."""
    forms = [t.strftime("%H:%M:%S")]
    for alt in (t.strftime("%H.%M.%S"), t.strftime("%H%M%S")):
        if alt in header and alt not in forms:
            forms.append(alt)
    return forms


def short_name(component: str) -> str:
    """The part of a component an answer will name: org.apache.hadoop.ipc.Client -> Client,
    188978561024:QuorumCnxManager$SendWorker -> SendWorker, sshd(pam_unix) -> sshd(pam_unix)."""
    return re.split(r"[.:$/]", component.strip())[-1] or component.strip()


def component_key(row: dict) -> str | None:
    c = (row.get("Component") or "").strip()
    return c.rsplit(":", 1)[-1] if c else None


def valid_levels(rows: list[dict]) -> bool:
    vals = {(r.get("Level") or "").strip().lower() for r in rows}
    return len(vals) >= 2 and vals <= LEVEL_WORDS


def template_regex(template: str) -> re.Pattern:
    parts = [r"\s+".join(re.escape(w) for w in p.split()) if p.strip() else r"\s*" for p in template.split("<*>")]
    body = "(.*?)".join(parts)
    return re.compile(r"\s*" + body + r"\s*")


_CLEAN_EDGE = re.compile(r"[A-Za-z][\w.'/-]*[A-Za-z0-9][:.,;]?")


def clean_phrase(text: str) -> str:
    """`text` without edge words that are not plain words (brackets, ids cut by a <*>)."""
    words = text.split()
    while words and not _CLEAN_EDGE.fullmatch(words[0]):
        words.pop(0)
    while words and not _CLEAN_EDGE.fullmatch(words[-1]):
        words.pop()
    return " ".join(words).rstrip(":,;.")


def phrase_of(template: str) -> str:
    """The longest clean literal stretch of a template (between its <*>s)."""
    return max((clean_phrase(p) for p in template.split("<*>")), key=len, default="")


def keywords(template: str, n: int = 3) -> list[str]:
    """The template's most distinctive literal words (longest first): what an explanation must name."""
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z0-9_\-.]{4,}", template.replace("<*>", " "))
             if w.lower().strip(".") not in STOP_WORDS]
    seen: list[str] = []
    for w in sorted(words, key=lambda w: (-len(w), w)):
        w = w.strip(".-")
        if w.lower() not in (s.lower() for s in seen):
            seen.append(w)
    return seen[:n]


_NUM = re.compile(r"-?\d+(?:\.\d+)?")


def is_number(s: str) -> bool:
    return bool(_NUM.fullmatch(s.strip()))


def num_text(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


# --- the judge and the loop rule: tools/bench/qa_judge.py (named here for the benchmarks that use them)

from tools.bench.qa_judge import LOOP_N, LOOP_REPEATS, is_loop, judge, loop_tokens, looped, numbers_in  # noqa: E402,F401


# --- facts of one Loghub system, picked by rule ---------------------------------------------------------

class Facts:
    """What the question templates need from one system's lines, computed once."""

    def __init__(self, system: str, raw: list[str], rows: list[dict]) -> None:
        self.system, self.raw, self.rows = system, raw, rows
        self.n = len(rows)
        self.templates = Counter(r["EventTemplate"] for r in rows)
        self.by_template: dict[str, list[int]] = {}
        for i, r in enumerate(rows):
            self.by_template.setdefault(r["EventTemplate"], []).append(i)
        self.times = [line_time(ln) for ln in raw]
        self.has_year = all(t is not None and t[1] for t in self.times)
        self.levels = valid_levels(rows)
        keys = [component_key(r) for r in rows]
        self.components = Counter(k for k in keys if k) if len({k for k in keys if k}) >= 2 else Counter()
        self.comp_of = keys

    def phrase_templates(self, lo: int, hi: int) -> list[tuple[str, str, int]]:
        """(template, phrase, count): templates with lo..hi lines whose longest literal stretch (>= 12
        chars) occurs in exactly those raw lines, most lines first."""
        out = []
        for t, c in self.templates.items():
            p = phrase_of(t)
            if lo <= c <= hi and len(p) >= 12 and sum(p in ln for ln in self.raw) == c:
                out.append((t, p, c))
        return sorted(out, key=lambda x: (-x[2], x[0]))

    def numeric_params(self) -> list[tuple[str, int, list[str]]]:
        """(template, param index, values) for params that are a number on every line of a template
        with >= 5 lines and >= 4 distinct values; the most distinct values first."""
        out = []
        for t, idx in self.by_template.items():
            if len(idx) < 5 or "<*>" not in t:
                continue
            rx = template_regex(t)
            ms = [rx.fullmatch(self.rows[i]["Content"]) for i in idx]
            if not all(ms):
                continue
            for k in range(t.count("<*>")):
                if not standalone_param(t, k):
                    continue
                vals = [m.group(k + 1).strip() for m in ms]
                if all(is_number(v) for v in vals) and len({float(v) for v in vals}) >= 4 \
                        and max(len(v) for v in vals) <= 12:
                    out.append((t, k, vals))
        return sorted(out, key=lambda x: (-len({float(v) for v in x[2]}), -len(x[2]), x[0], x[1]))

    def problem_template(self) -> str | None:
        """The most frequent template of the problem lines: non-INFO levels where the system has levels,
        else lines with an error word."""
        if self.levels:
            bad = Counter(r["EventTemplate"] for r in self.rows
                          if r["Level"].strip().lower() not in ("info", "notice", "debug", "trace", "fine"))
        else:
            bad = Counter(r["EventTemplate"] for r in self.rows if ERROR_WORDS.search(r["Content"]))
        best = [t for t, _ in sorted(bad.items(), key=lambda kv: (-kv[1], kv[0])) if keywords(t)]
        return best[0] if best else None


def standalone_param(template: str, k: int) -> bool:
    """The k-th <*> is a value of its own (port 22, = 3200, (TID 7)), not part of a name or id
    (core.<*>, part-<*>, attempt_<*>) nor one field of a clock time (<*>:<*>:<*>)."""
    parts = template.split("<*>")
    before, after = parts[k][-1:], parts[k + 1][:1]
    return (before in ("", " ", "=", ":", "(", "[") and after in ("", " ", ",", ")", "]", ";")
            and not (before == ":" and parts[k][-2:-1].isdigit()))


def _q(kind: str, en: str, zh: str, **check) -> dict:
    return {"kind": kind, "en": en, "zh": zh, "check": {k: v for k, v in check.items() if v is not None}}


def q_count_phrase(f: Facts) -> dict | None:
    c = f.phrase_templates(5, 400)
    if not c:
        return None
    _, p, n = c[len(c) // 2]
    return _q("count", f'How many lines in the {f.system} log contain "{p}"?',
              f"{f.system} 日志里出现了多少次“{p}”？", number=n)


def q_count_field(f: Facts) -> dict | None:
    if f.levels:
        lv = Counter(r["Level"].strip() for r in f.rows)
        cands = sorted(((c, v) for v, c in lv.items() if c >= 5), key=lambda cv: (cv[0], cv[1]))
        if cands:
            c, v = cands[0]
            return _q("count", f"How many {v} level lines did {f.system} log?",
                      f"{f.system} 一共有多少条 {v} 级别的日志？", number=c)
    if len(f.components) >= 2:
        (v, c) = f.components.most_common(2)[1]
        return _q("count", f"How many lines did the component {v} write in the {f.system} log?",
                  f"{f.system} 日志中组件 {v} 一共写了多少行？", number=c)
    return None


def _unique_top(counter: Counter, k: int = 1) -> list[str] | None:
    top = counter.most_common(k + 1)
    if len(top) < k + 1 or top[k - 1][1] == top[k][1]:
        return None
    return [v for v, _ in top[:k]]


def _comp_forms(c: str) -> list[str]:
    s = short_name(c)
    forms = [s]
    if "(" in s and s.split("(")[0]:
        forms.append(s.split("(")[0])
    return forms


def q_top_component(f: Facts) -> dict | None:
    if f.components:
        top = _unique_top(f.components)
        shorts = {short_name(c) for c in f.components}
        if top and len(shorts) == len(f.components):
            return _q("top-k", f"Which component wrote the most lines in the {f.system} log?",
                      f"{f.system} 日志里哪个组件输出的日志最多？", any_of=_comp_forms(top[0]))
    ips = Counter(ip for ln in f.raw for ip in set(re.findall(r"(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?![\d.])", ln)))
    top = _unique_top(ips) if sum(ips.values()) >= 20 else None
    if top:
        return _q("top-k", f"Which IP address appears in the most lines of the {f.system} log?",
                  f"{f.system} 日志中出现次数最多的 IP 地址是哪个？", any_of=top)
    return None


def q_top3_components(f: Facts) -> dict | None:
    if len(f.components) < 4:
        return None
    top = _unique_top(f.components, 3)
    if not top or len({short_name(c) for c in top}) < 3:
        return None
    return _q("top-k", f"List the 3 components with the most lines in the {f.system} log.",
              f"{f.system} 日志里行数最多的前 3 个组件是哪些？", all_of=[short_name(c) for c in top])


def q_top_template(f: Facts) -> dict | None:
    top = _unique_top(f.templates)
    if not top or not keywords(top[0]):
        return None
    return _q("top-k", f"What kind of message appears most often in the {f.system} log?",
              f"{f.system} 日志里最常出现的是哪类消息？", any_of=keywords(top[0]))


def _marked(template: str, k: int) -> str:
    parts = template.split("<*>")
    return "".join(p + ("" if i == len(parts) - 1 else ("<N>" if i == k else "<*>")) for i, p in enumerate(parts))


def q_extreme(f: Facts, which: str) -> dict | None:
    params = f.numeric_params()
    if not params:
        return None
    t, k, vals = params[0] if which == "max" or len(params) == 1 else params[1]
    nums = [float(v) for v in vals]
    x = max(nums) if which == "max" else min(nums)
    shape = _marked(t, k)
    en_w, zh_w = ("largest", "最大") if which == "max" else ("smallest", "最小")
    return _q("extreme", f'In the {f.system} lines of the form "{shape}", what is the {en_w} value of N?',
              f"{f.system} 日志中形如“{shape}”的行里，N 的{zh_w}值是多少？", number=num_text(x))


def q_first_last(f: Facts, which: str) -> dict | None:
    c = [x for x in f.phrase_templates(3, 400) if all(f.times[i] for i in f.by_template[x[0]])]
    if not c:
        return None
    t, p, _ = c[0] if which == "first" or len(c) == 1 else c[1]
    idx = f.by_template[t]
    when = [f.times[i] for i in idx]
    pick = min(range(len(idx)), key=lambda j: (when[j][0], j)) if which == "first" else \
        max(range(len(idx)), key=lambda j: (when[j][0], j))
    tm, _, header = when[pick]
    en_w, zh_w = ("first", "第一次") if which == "first" else ("last", "最后一次")
    return _q("first-last", f'When did "{p}" appear in the {f.system} log for the {en_w} time?',
              f"{f.system} 日志里“{p}”{zh_w}出现是在什么时候？", any_of=clock_forms(tm, header))


def _window(f: Facts) -> tuple[datetime, datetime, int] | None:
    ts = sorted(t[0] for t in f.times if t)
    if len(ts) < 20:
        return None
    for span in (2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 10800, 43200, 86400, 604800, 2592000):
        start = ts[int(0.3 * len(ts))].replace(microsecond=0)
        start = start.replace(second=0) if span >= 60 else start.replace(second=start.second // span * span)
        end = start + timedelta(seconds=span)
        n = sum(start <= t <= end for t in ts)
        if 10 <= n <= len(ts) // 2:
            return start, end, n
    return None


def q_time_window(f: Facts) -> dict | None:
    w = _window(f)
    if not w:
        return None
    a, b, n = render_time(w[0], f.has_year), render_time(w[1], f.has_year), w[2]
    return _q("time-window", f"How many lines did {f.system} log between {a} and {b} (inclusive)?",
              f"{f.system} 在 {a} 到 {b} 之间（含两端）一共记录了多少行日志？", number=n)


def q_why(f: Facts) -> dict | None:
    t = f.problem_template()
    if not t:
        return None
    what = ("errors and warnings" if f.levels else "failures")
    zh_what = ("错误和告警" if f.levels else "失败")
    comps = {f.comp_of[i] for i in f.by_template[t]} if f.components else set()
    forms = keywords(t) + (_comp_forms(next(iter(comps))) if len(comps) == 1 else [])
    return _q("why", f"Why are there so many {what} in the {f.system} log? What is the main cause?",
              f"为什么 {f.system} 日志里有这么多{zh_what}？主要原因是什么？", any_of=forms)


def q_lookup_value(f: Facts) -> dict | None:
    for t, idx in sorted(f.by_template.items(), key=lambda kv: (len(kv[1]), kv[0])):
        if len(idx) != 1 or t.count("<*>") != 1 or len(phrase_of(t)) < 10:
            continue
        m = template_regex(t).fullmatch(f.rows[idx[0]]["Content"])
        v = m.group(1).strip() if m else ""
        if len(v) >= 3 and v not in t and sum(v in ln for ln in f.raw) == 1:
            shape = t.replace("<*>", "<X>")
            return _q("lookup", f'The {f.system} log has one line of the form "{shape}". What is X in that line?',
                      f"{f.system} 日志里有一行形如“{shape}”，这一行里的 X 是什么？", all_of=[v])
    return None


def q_lookup_component(f: Facts) -> dict | None:
    if not f.components:
        return None
    for t, p, n in sorted(f.phrase_templates(1, 3), key=lambda x: (x[2], x[0])):
        comps = {f.comp_of[i] for i in f.by_template[t]}
        if len(comps) == 1:
            c = next(iter(comps))
            if sum(short_name(c) == short_name(o) for o in f.components) == 1:
                return _q("lookup", f'Which component logged "{p}" in the {f.system} log?',
                          f"{f.system} 日志里“{p}”是哪个组件打印的？", any_of=_comp_forms(c))
    return None


LOGHUB_TEMPLATES = (q_count_phrase, q_count_field, q_top_component, q_top3_components, q_top_template,
                    lambda f: q_extreme(f, "max"), lambda f: q_extreme(f, "min"),
                    lambda f: q_first_last(f, "first"), lambda f: q_first_last(f, "last"),
                    q_time_window, q_why, q_lookup_value, q_lookup_component)


def loghub_questions(f: Facts) -> list[dict]:
    return [q for make in LOGHUB_TEMPLATES if (q := make(f)) is not None]


# --- the demo line --------------------------------------------------------------------------------------

DEMO_SEED = 7
DEMO_CYCLES = 600                                            # ~1,900 lines, 20 simulated minutes
DEMO_START = datetime(2026, 12, 1, 8, 0, 0, tzinfo=UTC)


def demo_records(cycles: int = DEMO_CYCLES, seed: int = DEMO_SEED) -> list[dict]:
    """The demo line's records, deterministic for the seed: the appliance's own generator
    (gateway.ingest.demo.DemoLine, default schedule) from DEMO_START. Dicts in /api/ingest's NDJSON shape."""
    from gateway.ingest.demo import DemoLine
    from gateway.ingest.record import Severity
    line = DemoLine(seed=seed)
    return [{"ts": r.ts, "host": r.host, "severity": Severity(r.severity).name.lower(), "text": r.text,
             "source": "demo"} for r in line.records(cycles, start_ts=DEMO_START.timestamp())]


def _hhmmss(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%H:%M:%S")


def _demo_matches(recs: list[dict], pattern: str) -> list[tuple[dict, re.Match]]:
    rx = re.compile(pattern)
    return [(r, m) for r in recs if (m := rx.search(r["text"]))]


def demo_questions(recs: list[dict]) -> list[dict]:
    """Questions about the demo line, answers computed from `recs` (a few templates are the demo's own
    wording, as an operator of that line would ask; every figure comes from the records)."""
    out: list[dict] = []
    estops = _demo_matches(recs, r"E-STOP pressed at station (\w+)")
    jams = _demo_matches(recs, r"JAM detected")
    temps = _demo_matches(recs, r"heater zone 2 (?:temperature|over-temperature:) (\d+\.\d) C")
    torque = _demo_matches(recs, r"torque (\d+\.\d+) Nm")
    totals = _demo_matches(recs, r"complete: \d+ bottles, total (\d+)")
    overtemp = _demo_matches(recs, r"over-temperature")
    out.append(_q("count", "How many times was the E-STOP pressed?", "急停按钮一共被按下了多少次？", number=len(estops)))
    out.append(_q("count", "How many jams were detected on the line?", "产线上一共检测到多少次卡瓶（JAM）？",
                  number=len(jams)))
    out.append(_q("extreme", "What was the highest heater zone 2 temperature logged?",
                  "加热区 2 记录到的最高温度是多少？", number=max(float(m.group(1)) for _, m in temps)))
    out.append(_q("extreme", "What was the lowest capper torque logged, in Nm?", "封盖机记录到的最低扭矩是多少 Nm？",
                  number=min(float(m.group(1)) for _, m in torque)))
    stations = Counter(r["host"].split("/")[-1] for r, _ in jams)
    top = _unique_top(stations)
    if top:
        out.append(_q("top-k", "Which station had the most jams?", "哪个工位卡瓶次数最多？", any_of=top))
    ops = Counter(m.group(1) for _, m in _demo_matches(recs, r"operator (O-\d+) (?:cleared|reset|reduced)"))
    top = _unique_top(ops)
    if top:
        out.append(_q("top-k", "Which operator cleared the most faults?", "哪个操作员处理的故障最多？", any_of=top))
    out.append(_q("first-last", "When was the first heater over-temperature warning (UTC)?",
                  "第一次加热区超温告警是在什么时候（UTC）？", any_of=[_hhmmss(overtemp[0][0]["ts"])]))
    out.append(_q("lookup", "At which station was the E-STOP pressed the last time?",
                  "最后一次急停是在哪个工位按下的？", any_of=[estops[-1][1].group(1)]))
    out.append(_q("lookup", "What was the bottle total after the last completed cycle?",
                  "最后一个完成的周期之后，瓶子总数是多少？", number=int(totals[-1][1].group(1))))
    a = DEMO_START + timedelta(minutes=5)
    b = a + timedelta(minutes=5)
    n_err = sum(a.timestamp() <= r["ts"] <= b.timestamp() and r["severity"] in ("error", "critical") for r in recs)
    out.append(_q("time-window", f"How many ERROR or CRITICAL lines were logged between {a:%H:%M} and {b:%H:%M} UTC "
                  f"on {a:%Y-%m-%d}?", f"{a:%Y-%m-%d} UTC {a:%H:%M} 到 {b:%H:%M} 之间有多少条 ERROR 或 CRITICAL 日志？",
                  number=n_err))
    out.append(_q("why", "Why did the conveyor stop?", "输送带为什么停了？",
                  any_of=["jam", "卡瓶", "卡住", "photoeye", "PE-", "E-STOP", "急停"]))
    return out


# --- the set --------------------------------------------------------------------------------------------

def _with_lang(system: str, sys_index: int, qs: list[dict]) -> list[dict]:
    out = []
    for j, q in enumerate(qs):
        lang = "zh" if (j + sys_index) % ZH_EVERY == 0 else "en"
        out.append({"id": f"{system}-{j:02d}-{q['kind']}", "system": system, "lang": lang, "kind": q["kind"],
                    "question": q[lang], "check": q["check"]})
    return out


def build(data: Path = DEFAULT_DATA, systems: tuple[str, ...] = SYSTEMS, demo: bool = True) -> list[dict]:
    """The whole question set, deterministic for the data."""
    out: list[dict] = []
    for i, s in enumerate(systems):
        out += _with_lang(s, i, loghub_questions(Facts(s, *load_system(data, s))))
    if demo:
        out += _with_lang(DEMO, len(systems), demo_questions(demo_records()))
    return out


def system_lines(system: str, data: Path = DEFAULT_DATA) -> list[dict]:
    """What the bench sends to /api/ingest for `system`: Loghub raw lines as {"text": line} (nothing
    pre-parsed), the demo line as the records its source would produce, "synth/<shape>" as the raw
    lines qa_factory computed its answers from."""
    if system == DEMO:
        return demo_records()
    if system.startswith("synth/"):             # tools/bench/qa_factory.py: synth_logs' generated lines
        from tools.bench.qa_factory import raw_lines
        return [{"text": ln} for ln in raw_lines(system)]
    return [{"text": ln} for ln in load_system(data, system)[0]]


def write_questions(qs: list[dict], out: Path | None) -> None:
    """A question set as indented JSON (non-ASCII as written): into `out`, with a count on stderr, else stdout."""
    text = json.dumps(qs, ensure_ascii=False, indent=1)
    if out:
        out.write_text(text + "\n", encoding="utf-8")
        print(f"{len(qs)} questions -> {out}", file=sys.stderr)
    else:
        print(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder of <System>/<System>_2k.log*")
    ap.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated Loghub systems")
    ap.add_argument("--no-demo", action="store_true", help="leave out the demo line")
    ap.add_argument("--out", type=Path, help="write the JSON here (default: stdout)")
    a = ap.parse_args(argv)
    write_questions(build(a.data, tuple(s for s in a.systems.split(",") if s), demo=not a.no_demo), a.out)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    raise SystemExit(main())

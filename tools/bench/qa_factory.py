"""Operator questions over the synthetic factory-style log shapes of tools/bench/synth_logs.py (PLC
text, press/robot JSON, the Chinese MES log, the invented shapes, the IT shapes), each in three English
and three Chinese wordings, with the expected answers computed from the generator's ground truth
(template ids, levels, hosts, components, parameter values), never typed by hand. Written without
knowledge of the appliance's question parser.

A system is "synth/<shape>"; its lines are synth_logs.generate(shape, N_LINES, SEED), the same lines
bench_qa sends (qa_questions.system_lines). Question dicts are in qa_wordings' format: system, id
(shared by the six wordings of one base question), kind, lang, wording (1 formal, 2 terse,
3 colloquial), question, check (qa_questions.judge: number / any_of / all_of; a two-part question has
a number and an any_of, both must hold). The questions of a system are ordered wording-major (every
kind in English wording 1, then Chinese wording 1, ...), so `bench_qa --limit` takes whole rounds.

Split, fixed before any tuning (2026-12-04): the shapes sorted by sha256(SALT + shape); the first third
are held aside, the rest are for tuning.

    python tools/bench/qa_factory.py [--part tune|held|all] [--shapes a,b] [--out FILE]
"""
from __future__ import annotations

import argparse
import hashlib
import math
import re
import sys
from collections import Counter
from datetime import UTC, datetime
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
from tools.bench import qa_questions  # noqa: E402  (write_questions; it imports this module lazily)
from tools.bench import synth_logs as sl  # noqa: E402

N_LINES = 2000
SEED = 4
PREFIX = "synth/"
SALT = "linegate-factory-split-2026-12-04:"
SHAPES = sl.SHAPES
LVL_RANK = {name: k for k, name in enumerate(sl.LEVELS)}

from tools.bench.qa_factory_text import (  # noqa: E402  (the questions' words)
    WORDINGS, KINDS, HOST_NOUN, DEFAULT_NOUN, COND, LABELS,
    QTY_INT, SUMMABLE, KEY_KINDS, NOT_KEYS, NOT_QTY, UNITS)

# ---- the lines and the split ----

@lru_cache(maxsize=None)
def lines(shape: str) -> tuple:
    return tuple(sl.generate(shape, N_LINES, SEED))


def raw_lines(system: str) -> list[str]:
    """The raw text of a synth system's ("synth/<shape>") lines, as bench_qa ingests them."""
    return [ln.raw for ln in lines(system[len(PREFIX):] if system.startswith(PREFIX) else system)]


def split_order() -> list[str]:
    return sorted(SHAPES, key=lambda s: hashlib.sha256((SALT + s).encode()).hexdigest())


HELD = tuple(sorted(split_order()[:len(SHAPES) // 3]))
TUNE = tuple(s for s in SHAPES if s not in HELD)


def shapes(part: str) -> tuple[str, ...]:
    if part not in ("tune", "held", "all"):
        raise ValueError(f"part must be tune, held or all, not {part!r}")
    return {"tune": TUNE, "held": HELD, "all": SHAPES}[part]


# ---- facts of one shape ----

def placeholders(tid: str) -> list[tuple[str, str, str, str]]:
    """(name, kind, glued literal prefix, literal before) of each distinct placeholder of a template."""
    text = template_text(tid)
    out, seen, pos = [], set(), 0
    for m in sl._PH.finditer(text):
        before = text[pos:m.start()]
        pos = m.end()
        if m[1] in seen:
            continue
        seen.add(m[1])
        glue = re.search(r"[A-Za-z0-9%#]*$", before).group(0) if before[-1:].strip() else ""
        out.append((m[1], m[2] or m[1], glue, before))
    return out


def template_text(tid: str) -> str:
    shape, key = tid.split("/", 1)
    return next(r.text for r in sl._ROWS[shape] if r.key == key)


def num(v: str) -> Decimal:
    return Decimal(v.replace(",", "."))


def is_number(v: str) -> bool:
    return bool(re.fullmatch(r"-?\d+(?:[.,]\d+)?", v))


def _clean(chunk: str, glued_left: bool, glued_right: bool, after_value: bool) -> str:
    words = chunk.split()                       # a word glued to a value is part of it ("F" of F7123)
    if glued_left and words:
        words.pop(0)
    if glued_right and words and not words[-1].endswith("/"):
        words.pop()
    if after_value and words and words[0].rstrip(",") in UNITS:
        words.pop(0)                           # a value's unit: "bar exceeds limit" -> "exceeds limit"
    return " ".join(words).strip(" ,:;()[]{}\"'=/|<>-#.!")


def _good_phrase(p: str) -> bool:
    cjk = len(re.findall(r"[\u4e00-\u9fff]", p))
    return (cjk >= 3 or len(re.sub(r"[^A-Za-z]", "", p)) >= 7) and len(p) <= 60


class Facts:
    """What the question makers need from one shape's generated lines."""

    def __init__(self, shape: str) -> None:
        self.shape, self.lines = shape, lines(shape)
        self.raw = [ln.raw for ln in self.lines]
        self.native = sl._SPEC[shape][1]
        self.by_tid: dict[str, list[int]] = {}
        for i, ln in enumerate(self.lines):
            self.by_tid.setdefault(ln.template_id, []).append(i)
        self.tids = sorted(self.by_tid, key=lambda t: (-LVL_RANK.get(self.lines[self.by_tid[t][0]].level, -1), t))
        self.hosts = Counter(ln.host for ln in self.lines if ln.host)
        self.comps = Counter(ln.component for ln in self.lines if ln.component)
        self.noun = HOST_NOUN.get(shape, DEFAULT_NOUN)
        self.comma = any(k.startswith("dc") for t in self.by_tid for _, k, _, _ in placeholders(t))
        self._phrases: dict[str, str | None] = {}

    def phrase(self, tid: str) -> str | None:
        """The longest literal stretch of the template that occurs in exactly its raw lines."""
        if tid not in self._phrases:
            text, idx = template_text(tid), self.by_tid[tid]
            parts = sl._PH.split(text)[::4]
            cands = [_clean(p, k > 0 and not p[:1].isspace(), k < len(parts) - 1 and not p[-1:].isspace(), k > 0)
                     for k, p in enumerate(parts)]
            best = None
            for p in sorted((c for c in cands if _good_phrase(c)), key=lambda c: (-len(c), c)):
                if all(p in self.raw[i] for i in idx) and sum(p in r for r in self.raw) == len(idx):
                    best = p
                    break
            self._phrases[tid] = best
        return self._phrases[tid]

    def lab(self, name: str) -> tuple[str, str]:
        return LABELS.get(f"{self.shape}/{name}", LABELS.get(name, (name, name)))

    def level_word(self, level: str, lang: int) -> str:
        w = self.native.get(level, level)
        if len(w) == 1:
            return f'level "{w}"' if lang == 0 else f'"{w}" 级别'
        if re.search(r"[\u4e00-\u9fff]", w) and lang == 0:
            return f"{w} ({level})"
        return w

    def values(self, tid: str, name: str) -> list[str]:
        return [self.lines[i].params[name] for i in self.by_tid[tid]]

    def quantities(self, names: set | None = None) -> list[tuple[str, str]]:
        """(template, param) pairs with a numeric quantity, >= 5 lines and >= 4 distinct values."""
        out = []
        for tid in self.tids:
            if not self.phrase(tid) or len(self.by_tid[tid]) < 5:
                continue
            for name, kind, glue, _ in placeholders(tid):
                q = (re.fullmatch(r"(f|dc)\d", kind) or kind == "ms" or (kind == "int" and name in QTY_INT)) \
                    and name not in NOT_QTY
                vals = self.values(tid, name)
                if q and not glue and (names is None or name in names) and all(map(is_number, vals)) \
                        and len(set(vals)) >= 4:
                    out.append((tid, name))
        return out

    def keys(self, tid: str) -> list[tuple[str, str]]:
        """(name, glue) of the params that may identify a line of the template."""
        ph = placeholders(tid)
        return [(n, g) for n, k, g, _ in ph if k in KEY_KINDS and n not in NOT_KEYS
                and not (k == "int" and n in QTY_INT)] + \
            [(n, g) for n, k, g, _ in ph if re.fullmatch(r"(f|dc)\d", k) and n not in NOT_QTY]

    def host_for(self, idx: list[int], need: int = 3) -> str | None:
        c = Counter(self.lines[i].host for i in idx if self.lines[i].host)
        top = sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))
        return top[0][0] if top and top[0][1] >= need else None

    def unique_top(self, idx: list[int], field: str) -> str | None:
        c = Counter(getattr(self.lines[i], field) for i in idx if getattr(self.lines[i], field))
        top = c.most_common(2)
        if not top or (len(top) > 1 and top[0][1] == top[1][1]):
            return None
        names = self.hosts if field == "host" else self.comps
        return top[0][0] if not any(top[0][0] in o for o in names if o != top[0][0]) else None


# ---- checks ----

def num_check(d: Decimal, comma: bool) -> dict:
    if d == d.to_integral_value():
        return {"number": int(d)}
    s = format(d.normalize(), "f")
    return {"any_of": [s.replace(".", ","), s]} if comma else {"number": float(s)}


def time_forms(ln: sl.SynthLine) -> list[str]:
    """Ways an answer may give the time of a line: UTC clock, and the clock/epoch the raw line prints."""
    dt = datetime.fromtimestamp(ln.ts, UTC)
    forms = [f"{dt:%H:%M:%S}"]
    us = round(ln.ts * 1e6)
    for alt in (f"{dt.astimezone(sl.CET):%H:%M:%S}", f"T{dt:%H%M%S}", str(us // 1000), str(us)):
        if alt in ln.raw and alt.lstrip("T") not in forms:
            forms.append(alt.lstrip("T"))
    return forms


def _base(kind: str, fields: dict, check: dict, spec: dict) -> dict:
    return {"kind": kind, "fields": fields, "check": check, "spec": {k: v for k, v in spec.items() if v is not None}}


def _cond(f: Facts, host: str | None) -> tuple[str, str]:
    if not host:
        return ("", "")
    return tuple(COND[k].format(N=f.noun[k], H=host) for k in (0, 1))


# ---- question makers: each returns a base question or None ----

def _levels_by_rank(f: Facts, lo: int = 5) -> list[str]:
    c = Counter(ln.level for ln in f.lines if ln.level)
    return sorted((lv for lv, n in c.items() if n >= lo), key=lambda lv: -LVL_RANK[lv])


def q_count_level(f: Facts) -> dict | None:
    lv = _levels_by_rank(f)
    if not lv:
        return None
    n = sum(ln.level == lv[0] for ln in f.lines)
    return _base("count-level", {"L": (f.level_word(lv[0], 0), f.level_word(lv[0], 1))}, {"number": n},
                 {"op": "count", "native": f.native[lv[0]]})


def q_count_group(f: Facts, field: str) -> dict | None:
    c = f.hosts if field == "host" else f.comps
    if len(c) < 2:
        return None                                 # the second busiest host, a middle component
    v = sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[1 if field == "host" else len(c) // 2][0]
    kind, key = ("count-host", "H") if field == "host" else ("count-component", "C")
    return _base(kind, {key: v}, {"number": c[v]}, {"op": "count", field: v})


def q_count_event(f: Facts) -> dict | None:
    tid = next((t for t in f.tids[1:] + f.tids[:1] if f.phrase(t)), None)
    if not tid:
        return None
    return _base("count-event", {"P": f.phrase(tid)}, {"number": len(f.by_tid[tid])},
                 {"op": "count", "phrase": f.phrase(tid)})


def q_count_value(f: Facts) -> dict | None:
    for tid in f.tids:
        if not f.phrase(tid):
            continue
        for name, glue in f.keys(tid):
            c = Counter(f.values(tid, name))
            for v, n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0])):
                if 3 <= n < len(f.by_tid[tid]) and len(c) >= 2:
                    return _base("count-value", {"P": f.phrase(tid), "Y": f.lab(name),
                                                 "V": glue + v}, {"number": n},
                                 {"op": "count", "phrase": f.phrase(tid), "tpl": tid, "eq": [name, v]})
    return None


def _group(f: Facts) -> tuple[str, tuple[str, str]]:
    return ("host", f.noun) if len(f.hosts) >= 2 else ("component", ("component", "模块"))


def q_top(f: Facts) -> dict | None:
    field, noun = _group(f)
    for lv in sorted(_levels_by_rank(f), key=lambda lv: (lv not in ("error", "warning"), -LVL_RANK[lv])):
        idx = [i for i, ln in enumerate(f.lines) if ln.level == lv]
        top = f.unique_top(idx, field)
        if top and len({getattr(f.lines[i], field) for i in idx}) >= 2:
            what = (f"{f.level_word(lv, 0)} entries", f" {f.level_word(lv, 1)} 日志")
            return _base("top-k", {"E": what, "G": noun}, {"any_of": [top]},
                         {"op": "top", "native": f.native[lv], "group": field})
    return None


def q_time(f: Facts, last: bool) -> dict | None:
    cands = [t for t in f.tids if f.phrase(t) and len(f.by_tid[t]) >= 3]
    if not cands:
        return None
    tid = cands[(3 if last else 2) % len(cands)]
    ln = f.lines[f.by_tid[tid][-1 if last else 0]]
    return _base("last-time" if last else "first-time", {"P": f.phrase(tid)}, {"any_of": time_forms(ln)},
                 {"op": "last" if last else "first", "phrase": f.phrase(tid)})


def _pick_qty(f: Facts, k: int, names: set | None = None) -> tuple[str, str] | None:
    q = f.quantities(names)
    if not q:
        return None
    tids = list(dict.fromkeys(t for t, _ in q))      # spread the kinds over templates
    tid = tids[k % len(tids)]
    return next(x for x in q if x[0] == tid)


def q_agg(f: Facts, op: str) -> dict | None:
    pq = _pick_qty(f, 1 if op == "min" else 0, SUMMABLE if op == "sum" else None)
    if not pq:
        return None
    tid, name = pq
    host = f.host_for(f.by_tid[tid]) if op != "max" else None
    vals = [num(f.lines[i].params[name]) for i in f.by_tid[tid] if host is None or f.lines[i].host == host]
    x = {"max": max, "min": min, "sum": lambda v: sum(v, Decimal(0))}[op](vals)
    return _base(op, {"P": f.phrase(tid), "X": f.lab(name), "W": _cond(f, host)},
                 num_check(x, f.comma), {"op": op, "phrase": f.phrase(tid), "tpl": tid, "param": name,
                                         "host": host})


def q_avg(f: Facts) -> dict | None:
    for k in range(2, 2 + len(f.quantities())):
        tid, name = _pick_qty(f, k)
        idx = f.by_tid[tid]
        host = f.host_for(idx, 4)
        idx = [i for i in idx if host is None or f.lines[i].host == host]
        vals = [f.lines[i].params[name] for i in idx]
        d = min(3, max([1] + [len(re.split(r"[.,]", v)[1]) for v in vals if re.search(r"[.,]", v)]))
        scaled = sum(Fraction(num(v)) for v in vals) / len(vals) * 10 ** d
        if scaled - math.floor(scaled) == Fraction(1, 2):
            continue                                  # a tie: two roundings would be right
        x = Decimal(math.floor(scaled + Fraction(1, 2))).scaleb(-d)
        dt = ("one decimal place", "two decimal places", "three decimal places")[d - 1]
        return _base("avg", {"P": f.phrase(tid), "X": f.lab(name), "W": _cond(f, host),
                             "D": str(d), "DT": dt}, num_check(x, f.comma),
                     {"op": "avg", "phrase": f.phrase(tid), "tpl": tid, "param": name, "host": host, "digits": d})
    return None


def _unique_keys(f: Facts, need_host: bool):
    """(template, key name, glue, line index) of lines one key value identifies within their template."""
    for tid in f.tids:
        if not f.phrase(tid):
            continue
        for name, glue in f.keys(tid):
            c = Counter(f.values(tid, name))
            for i in f.by_tid[tid][len(f.by_tid[tid]) // 3:]:
                v = f.lines[i].params[name]
                if c[v] == 1 and 2 <= len(v) <= 24 and (f.lines[i].host or not need_host):
                    yield tid, name, glue, i
                    break


def q_lookup_host(f: Facts) -> dict | None:
    if len(f.hosts) < 2:
        return None
    for tid, name, glue, i in _unique_keys(f, True):
        ln = f.lines[i]
        if not any(ln.host in o for o in f.hosts if o != ln.host):
            v = ln.params[name]
            return _base("lookup-host", {"P": f.phrase(tid), "Y": f.lab(name), "V": glue + v}, {"any_of": [ln.host]},
                         {"op": "lookup-host", "phrase": f.phrase(tid), "tpl": tid, "eq": [name, v]})
    return None


def q_lookup_value(f: Facts) -> dict | None:
    used = None
    for tid, name, glue, i in _unique_keys(f, False):
        if used is None and len(f.hosts) >= 2:
            used = tid                              # leave the first one to lookup-host
            continue
        for other, kind, oglue, _ in placeholders(tid):
            v = f.lines[i].params[other]
            if other == name or other in NOT_KEYS or oglue or len(v) < 2 or v in sl._PH.sub("", template_text(tid)):
                continue
            check = num_check(num(v), f.comma) if is_number(v) else {"any_of": [v]}
            key = f.lines[i].params[name]
            return _base("lookup-value", {"P": f.phrase(tid), "Y": f.lab(name), "V": glue + key, "X": f.lab(other)},
                         check, {"op": "value", "phrase": f.phrase(tid), "tpl": tid, "eq": [name, key], "param": other})
    return None


def q_last_value(f: Facts) -> dict | None:
    pq = _pick_qty(f, 3)
    if not pq:
        return None
    tid, name = pq
    host = f.host_for(f.by_tid[tid], 2)
    idx = [i for i in f.by_tid[tid] if host is None or f.lines[i].host == host]
    return _base("last-value", {"P": f.phrase(tid), "X": f.lab(name), "W": _cond(f, host)},
                 num_check(num(f.lines[idx[-1]].params[name]), f.comma),
                 {"op": "last-value", "phrase": f.phrase(tid), "tpl": tid, "param": name, "host": host})


def q_window(f: Facts) -> dict | None:
    newest = f.lines[-1].ts
    lv = sorted(_levels_by_rank(f), key=lambda lv: (lv != "warning", LVL_RANK[lv] < LVL_RANK["warning"],
                                                    LVL_RANK[lv]))
    tid = next((t for t in f.tids if f.phrase(t)), None)
    if lv:
        idx = [i for i, ln in enumerate(f.lines) if ln.level == lv[0]]
        what = (f"{f.level_word(lv[0], 0)} entries", f" {f.level_word(lv[0], 1)} 日志")
        spec = {"op": "count", "native": f.native[lv[0]]}
    elif tid:
        idx = f.by_tid[tid]
        what = (f'"{f.phrase(tid)}" entries', f"“{f.phrase(tid)}”")
        spec = {"op": "count", "phrase": f.phrase(tid)}
    else:
        return None
    for minutes in (10, 15, 5, 20, 30, 25) + tuple(range(6, 36)):
        cut = newest - 60 * minutes
        if any(abs(f.lines[i].ts - cut) < 1.0 for i in idx):
            continue                  # no counted line at the edge: inclusive or not, to the second or not
        n = sum(f.lines[i].ts >= cut for i in idx)
        if n >= 2:
            return _base("time-window", {"E": what, "M": str(minutes)}, {"number": n},
                         dict(spec, window_s=60 * minutes))
    return None


def q_two_asks(f: Facts) -> dict | None:
    field, noun = _group(f)
    if field == "host":
        for tid in f.tids[2:] + f.tids[:2]:
            top = f.unique_top(f.by_tid[tid], "host") if f.phrase(tid) else None
            if top and len(f.by_tid[tid]) >= 5:
                return _base("two-asks", {"E": (f'"{f.phrase(tid)}" entries', f"“{f.phrase(tid)}”"), "G": noun},
                             {"number": len(f.by_tid[tid]), "any_of": [top]},
                             {"op": "two", "phrase": f.phrase(tid), "group": "host"})
    for lv in _levels_by_rank(f)[1:] + _levels_by_rank(f)[:1]:
        idx = [i for i, ln in enumerate(f.lines) if ln.level == lv]
        top = f.unique_top(idx, field)
        if top and len({f.lines[i].component for i in idx}) >= 2:
            return _base("two-asks", {"E": (f"{f.level_word(lv, 0)} entries", f" {f.level_word(lv, 1)} 日志"),
                                      "G": noun}, {"number": len(idx), "any_of": [top]},
                         {"op": "two", "native": f.native[lv], "group": field})
    return None


MAKERS = {"count-level": q_count_level, "count-host": lambda f: q_count_group(f, "host"),
          "count-component": lambda f: q_count_group(f, "comp"),
          "count-event": q_count_event, "count-value": q_count_value, "top-k": q_top,
          "first-time": lambda f: q_time(f, False), "last-time": lambda f: q_time(f, True),
          "max": lambda f: q_agg(f, "max"), "min": lambda f: q_agg(f, "min"), "avg": q_avg,
          "sum": lambda f: q_agg(f, "sum"),
          "lookup-host": q_lookup_host, "lookup-value": q_lookup_value, "last-value": q_last_value,
          "time-window": q_window, "two-asks": q_two_asks}


@lru_cache(maxsize=None)
def _bases(shape: str) -> tuple:
    f = Facts(shape)
    return tuple((k, b) for k in KINDS if (b := MAKERS[k](f)) is not None)


def bases(shape: str) -> list[dict]:
    """The base questions of a shape with their specs (what was asked, for the tests to recompute)."""
    return [dict(b, fields=dict(b["fields"])) for _, b in _bases(shape)]


def render(shape: str, b: dict, lang: int, w: int) -> str:
    noun = HOST_NOUN.get(shape, DEFAULT_NOUN)
    fields = {"N": noun[lang], "W": "", "D": "", "DT": ""}
    for k, v in b["fields"].items():
        fields[k] = v[lang] if isinstance(v, tuple) else v
    text = WORDINGS[b["kind"]][3 * lang + w].format(**fields)
    return re.sub(r" {2,}", " ", text).strip()


def questions(shape: str) -> list[dict]:
    """Every question of one shape: each base question in en/zh wordings 1-3, wording-major order."""
    system = PREFIX + shape
    out = []
    for w in range(3):
        for lang in (0, 1):
            for b in bases(shape):
                out.append({"system": system, "id": f"{system}-{b['kind']}-1", "kind": b["kind"],
                            "lang": ("en", "zh")[lang], "wording": w + 1, "question": render(shape, b, lang, w),
                            "check": b["check"]})
    return out


def build(part: str = "all", only: tuple[str, ...] = ()) -> list[dict]:
    return [q for s in shapes(part) if not only or s in only for q in questions(s)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=("tune", "held", "all"), default="tune")
    ap.add_argument("--shapes", default="", help="comma-separated shapes (default: all of the part)")
    ap.add_argument("--out", type=Path, help="write the JSON here (default: stdout)")
    a = ap.parse_args(argv)
    qa_questions.write_questions(build(a.part, tuple(s for s in a.shapes.split(",") if s)), a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

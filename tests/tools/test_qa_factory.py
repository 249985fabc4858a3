"""Factory-shape operator questions (tools/bench/qa_factory.py): the file builds for every shape, every
expected answer is recomputed here from the raw generated text (own parsers per shape, own template
regexes), the split is fixed, and bench_qa ingests the very lines the answers came from."""
from __future__ import annotations

import csv
import hashlib
import json
import re
from collections import Counter
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal

import pytest

from tools.bench import qa_factory as qf
from tools.bench import qa_questions as qq
from tools.bench import synth_logs as sl

CJK = re.compile(r"[\u4e00-\u9fff]")
SEVERITY = ("emergency", "alert", "critical", "error", "warning", "notice", "info", "debug")   # RFC 5424 order
FACTORY = ("chinese", "csv", "pipe", "pipe_spaced", "invented_1", "invented_2", "invented_3", "invented_4",
           "app_json", "logfmt")


# ---- raw parsers: (utc time, level as printed, host, component, message), written from the raw text ----

def _ts(text: str, fmt: str) -> datetime:
    t = datetime.strptime(text, fmt)
    return t.astimezone(UTC) if t.tzinfo else t.replace(tzinfo=UTC)


def _rx(pattern: str, fmt: str, prefix: str = ""):
    rx = re.compile(pattern)

    def parse(raw: str):
        g = rx.fullmatch(raw).groupdict()
        return (_ts(prefix + g["t"], fmt), g.get("lvl"), g.get("host"), g.get("comp"), g["msg"])
    return parse


def _journald(raw):
    d = json.loads(raw)
    return (datetime.fromtimestamp(int(d["__REALTIME_TIMESTAMP"]) / 1e6, UTC), SEVERITY[int(d["PRIORITY"])],
            d["_HOSTNAME"], d["SYSLOG_IDENTIFIER"], d["MESSAGE"])


def _app_json(raw):
    d = json.loads(raw)
    return datetime.fromisoformat(d["time"]).astimezone(UTC), d["lvl"], d["unit"], d["mod"], d["text"]


def _k8s(raw):
    d = json.loads(raw)
    return datetime.fromtimestamp(d["ts"], UTC), d["level"], d.get("node"), d["logger"], d["msg"]


def _syslog(pattern, fmt, prefix=""):
    base = _rx(pattern, fmt, prefix)

    def parse(raw):
        t, pri, host, comp, msg = base(raw)
        return t, SEVERITY[int(pri) % 8], host, comp, msg
    return parse


def _logfmt(raw):
    m = re.fullmatch(r'time=(\S+)Z level=(\S+) host=(\S+) component=(\S+) msg=("(?:[^"\\]|\\.)*"|\S+) seq=\d+', raw)
    msg = json.loads(m[5]) if m[5].startswith('"') else m[5]
    return _ts(m[1], "%Y-%m-%dT%H:%M:%S"), m[2], m[3], m[4], msg


def _fields(sep, n, layout):
    def parse(raw):
        f = raw.split(sep, n)
        return layout(f)
    return parse


def _csv(raw):
    ymd, lvl, host, comp, msg = next(csv.reader([raw]))
    return _ts(ymd, "%Y-%m-%d %H:%M:%S"), lvl, host, comp, msg


PIPE = (lambda f: (_ts(f[0], "%Y-%m-%d %H:%M:%S.%f"), f[1], f[2], f[3], f[4]))
PARSE = {
    "logcat": _rx(r"(?P<t>\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) +\d+ +\d+ (?P<lvl>\w) (?P<comp>[^:]+): (?P<msg>.*)",
                  "%Y-%m-%d %H:%M:%S.%f", "2026-"),
    "rfc5424": _syslog(r"<(?P<lvl>\d+)>1 (?P<t>\S+) (?P<host>\S+) (?P<comp>\S+) \S+ \S+ (?:-|(?:\[[^\]]*\])+) "
                       r"(?P<msg>.*)", "%Y-%m-%dT%H:%M:%S.%fZ"),
    "rfc3164": _syslog(r"<(?P<lvl>\d+)>(?P<t>\w{3} [ \d]\d \d\d:\d\d:\d\d) (?P<host>\S+) (?P<comp>[^:\[]+)"
                       r"(?:\[\d+\])?: (?P<msg>.*)", "%Y %b %d %H:%M:%S", "2026 "),
    "journald_json": _journald, "app_json": _app_json, "k8s_json": _k8s,
    "chinese": _rx(r"(?P<t>\S+ \S+) \[(?P<lvl>[^\]]+)\] (?P<host>\S+) (?P<comp>[^:]+): (?P<msg>.*)",
                   "%Y-%m-%d %H:%M:%S.%f"),
    "log4j_mdc": _rx(r"(?P<t>\S+ \S+,\d{3}) \[[^\]]+\] (?P<lvl>\w+) +(?P<comp>\S+) \[[^\]]*\] - (?P<msg>.*)",
                     "%Y-%m-%d %H:%M:%S,%f"),
    "windows_cbs": _rx(r"(?P<t>\S+ \S+), (?P<lvl>\w+) +(?P<comp>\w+) +(?P<msg>\S.*)", "%Y-%m-%d %H:%M:%S"),
    "nginx_access": _rx(r"\S+ - \S+ \[(?P<t>[^\]]+)\] (?P<msg>.*)", "%d/%b/%Y:%H:%M:%S %z"),
    "logfmt": _logfmt, "csv": _csv,
    "pipe": _fields("|", 4, PIPE), "pipe_spaced": _fields(" | ", 4, PIPE),
    "invented_1": _rx(r"#\d+ (?P<t>\d{8}T\d{6}\.\d{3}) (?P<host>\S+) <(?P<lvl>\w+)> (?P<comp>\w+): (?P<msg>.*)",
                      "%Y%m%dT%H%M%S.%f"),
    "invented_2": _fields("\t", 5, lambda f: (datetime.fromtimestamp(int(f[0]) / 1000, UTC), f[1], f[2], f[4],
                                              f[5])),
    "invented_3": _rx(r"weldctl_\d{8}\.log (?P<t>\S+ \[[\d:.]+\]) (?P<comp>.+?) - (?P<lvl>\w+): (?P<msg>.*)",
                      "%d/%m/%Y [%H:%M:%S.%f]"),
    "invented_4": _fields(";", 5, lambda f: (_ts(f"{f[0]} {f[1]}", "%d.%m.%Y %H:%M:%S"), f[3], f[2], f[4], f[5])),
}


def parsed(shape):
    return [PARSE[shape](raw) for raw in qf.raw_lines("synth/" + shape)]


def tpl_regex(tid: str) -> re.Pattern:
    shape, key = tid.split("/", 1)
    text = next(r.text for r in sl._ROWS[shape] if r.key == key)
    out, seen, pos = "", set(), 0
    for m in re.finditer(r"\{(\w+)(?::\w+(?::[^{}]*)?)?\}", text):
        out += re.escape(text[pos:m.start()]) + (f"(?P={m[1]})" if m[1] in seen else f"(?P<{m[1]}>.+?)")
        seen.add(m[1])
        pos = m.end()
    return re.compile(out + re.escape(text[pos:]))


def dec(v: str) -> Decimal:
    return Decimal(v.replace(",", "."))


def agrees(check: dict, value) -> bool:
    """The computed `value` is what the check asks for."""
    if "number" in check:
        return Decimal(str(check["number"])) == (value if isinstance(value, Decimal) else dec(str(value)))
    forms = {str(value)}
    if isinstance(value, Decimal):
        forms = {format(value.normalize(), "f"), format(value.normalize(), "f").replace(".", ",")}
    return bool(forms & set(check["any_of"]))


def recompute(shape: str, b: dict, rows) -> None:
    s, check = b["spec"], b["check"]
    sel = list(range(len(rows)))
    if "window_s" in s:
        newest = max(r[0] for r in rows).timestamp()
        sel = [i for i in sel if rows[i][0].timestamp() >= newest - s["window_s"]]
    for key, col in (("native", 1), ("host", 2), ("comp", 3)):
        if key in s:
            sel = [i for i in sel if rows[i][col] == s[key]]
    if "phrase" in s:
        raw = qf.raw_lines("synth/" + shape)
        sel = [i for i in sel if s["phrase"] in raw[i]]
    vals = {}
    if "tpl" in s:
        rx = tpl_regex(s["tpl"])
        ms = {i: rx.fullmatch(rows[i][4]) for i in sel}
        assert all(ms.values()), f"{s['tpl']}: a phrase line is not of its template"
        if "eq" in s:
            sel = [i for i in sel if ms[i][s["eq"][0]] == s["eq"][1]]
        vals = {i: ms[i][s["param"]] for i in sel} if "param" in s else {}
    op, hms = s["op"], [rows[i][0].strftime("%H:%M:%S") for i in sel]
    col = {"host": 2, "comp": 3, "component": 3}.get(s.get("group"), 2)
    top = Counter(rows[i][col] for i in sel).most_common(2)
    if op in ("top", "two"):
        assert top[0][1] > top[1][1] and top[0][0] in check["any_of"]
    if op in ("count", "two"):
        assert check["number"] == len(sel)
    elif op in ("first", "last"):
        assert hms[0 if op == "first" else -1] in check["any_of"]
    elif op in ("lookup-host", "value"):
        assert len(sel) == 1
        assert agrees(check, rows[sel[0]][2] if op == "lookup-host" else vals[sel[0]])
    elif op == "last-value":
        assert agrees(check, dec(vals[sel[-1]]))
    elif op in ("max", "min", "sum", "avg"):
        v = [dec(x) for x in vals.values()]
        got = {"max": max, "min": min, "sum": sum}.get(op, lambda v: (sum(v) / len(v)).quantize(
            Decimal(1).scaleb(-s["digits"]), rounding=ROUND_HALF_UP))(v)
        assert agrees(check, got), (got, check)
    else:
        assert op == "top", op


# ---- tests ----

@pytest.mark.parametrize("shape", qf.SHAPES)
def test_raw_parse_agrees_with_the_ground_truth(shape):
    native = sl._SPEC[shape][1]
    for ln, (t, lvl, host, comp, msg) in zip(qf.lines(shape), parsed(shape)):
        assert abs(t.timestamp() - ln.ts) < 1e-3, ln.raw
        assert lvl == (native.get(ln.level) if ln.level else None), ln.raw
        assert (host, comp) == (ln.host, ln.component) or shape == "nginx_access", ln.raw
        assert msg == ln.message, ln.raw


@pytest.mark.parametrize("shape", qf.SHAPES)
def test_every_answer_recomputed_from_the_raw_lines(shape):
    rows = parsed(shape)
    for b in qf.bases(shape):
        recompute(shape, b, rows)


@pytest.mark.parametrize("shape", qf.SHAPES)
def test_the_file_builds_six_wordings_per_base_question(shape):
    qs = qf.questions(shape)
    groups: dict[str, list] = {}
    for q in qs:
        assert set(q) == {"system", "id", "kind", "lang", "wording", "question", "check"}
        assert q["system"] == "synth/" + shape and q["kind"] in qf.KINDS and "{" not in q["question"]
        assert q["lang"] == "en" or CJK.search(q["question"]), q
        groups.setdefault(q["id"], []).append(q)
    assert len(groups) >= (15 if shape in FACTORY else 10), sorted(groups)
    for g in groups.values():
        assert sorted((q["lang"], q["wording"]) for q in g) == [(lang, w) for lang in ("en", "zh") for w in (1, 2, 3)]
        assert len({q["question"] for q in g}) == 6 and len({json.dumps(q["check"]) for q in g}) == 1


def test_checks_judge_a_right_answer_and_refuse_a_wrong_one():
    for q in qf.build("all"):
        c = q["check"]
        right = " and ".join([f"{c['number']:,}" if isinstance(c["number"], int) else str(c["number"])]
                             if "number" in c else [])
        right += f" - {c['any_of'][-1]}" if "any_of" in c else ""
        assert qq.judge(f"It is {right}.", c), q
        assert not qq.judge("It is zzz 123456789.5.", c), q


def test_split_is_fixed():
    order = sorted(sl.SHAPES, key=lambda s: hashlib.sha256(f"linegate-factory-split-2026-12-04:{s}".encode())
                   .hexdigest())
    assert qf.HELD == tuple(sorted(order[:6])) == ("app_json", "csv", "invented_4", "k8s_json", "nginx_access",
                                                   "pipe")
    assert set(qf.TUNE) | set(qf.HELD) == set(sl.SHAPES) and not set(qf.TUNE) & set(qf.HELD)
    assert {q["system"] for q in qf.build("held")} == {"synth/" + s for s in qf.HELD}


def test_bench_ingests_the_lines_the_answers_came_from():
    for shape in ("invented_1", "chinese"):
        want = [ln.raw for ln in sl.generate(shape, qf.N_LINES, qf.SEED)]
        assert [x["text"] for x in qq.system_lines("synth/" + shape)] == want


def test_cli_writes_the_part(tmp_path):
    out = tmp_path / "q.json"
    assert qf.main(["--part", "held", "--shapes", "pipe", "--out", str(out)]) == 0
    qs = json.loads(out.read_text(encoding="utf-8"))
    assert qs and {q["system"] for q in qs} == {"synth/pipe"}
    assert [q["wording"] for q in qs[:3]] == [1, 1, 1] and qs[0]["lang"] == "en"

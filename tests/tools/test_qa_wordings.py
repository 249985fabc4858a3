"""Operator question wordings (tools/bench/qa_wordings.py): coverage per
system, computed checks, judge(), and grep cross-checks on the raw logs."""
import json
import re
from collections import defaultdict

import pytest

from tools.bench.qa_wordings import DEFAULT_DATA, judge, main, questions

SYSTEMS = ["Apache", "BGL", "HDFS", "Hadoop", "Linux", "OpenSSH", "Spark", "Zookeeper"]
CJK = re.compile(r"[\u4e00-\u9fff]")

needs_data = pytest.mark.skipif(not (DEFAULT_DATA / "HDFS").is_dir(),
                                reason=f"no Loghub data under {DEFAULT_DATA}")

_cache = {}


def _qs(system):
    if system not in _cache:
        _cache[system] = questions(DEFAULT_DATA, system)
    return _cache[system]


def _raw(system):
    return (DEFAULT_DATA / system / f"{system}_2k.log").read_text(
        encoding="utf-8", errors="replace").lower().split("\n")


def _en1(system, kind):
    return [q for q in _qs(system) if q["kind"] == kind and q["lang"] == "en"
            and q["wording"] == 1]


def _right(check):
    if "number" in check:
        n = check["number"]
        return f"There were {n:,} lines." if isinstance(n, int) else f"It was {n}."
    if "any_of" in check:
        return f"The answer is {check['any_of'][0]}."
    return "Found: " + ", ".join(check["all_of"]) + "."


def _wrong(check):
    if "number" in check:
        return f"There were {check['number'] + 1} lines."
    return "The answer is zzz-not-it."


@needs_data
@pytest.mark.parametrize("system", SYSTEMS)
def test_six_wordings_per_base_question(system):
    by_id = defaultdict(list)
    for q in _qs(system):
        assert set(q) == {"system", "id", "kind", "lang", "wording", "question", "check"}
        assert q["system"] == system and q["id"].startswith(f"{system}-{q['kind']}-")
        by_id[q["id"]].append(q)
    assert len(by_id) >= 5, sorted(by_id)
    for qid, group in by_id.items():
        assert sorted((q["lang"], q["wording"]) for q in group) == \
            [("en", 1), ("en", 2), ("en", 3), ("zh", 1), ("zh", 2), ("zh", 3)]
        assert len({json.dumps(q["check"], sort_keys=True) for q in group}) == 1
        for lang in ("en", "zh"):
            texts = [q["question"] for q in group if q["lang"] == lang]
            assert len(set(texts)) == 3, texts
            assert all(t.strip() and "{" not in t for t in texts)
            assert all(bool(CJK.search(t)) == (lang == "zh") for t in texts), texts


@needs_data
@pytest.mark.parametrize("system", SYSTEMS)
def test_checks_are_computed_and_judged(system):
    for q in _qs(system):
        check = q["check"]
        assert len(check) == 1 and next(iter(check)) in ("number", "any_of", "all_of")
        if "number" in check:
            assert isinstance(check["number"], (int, float)) and check["number"] is not None
        else:
            vals = next(iter(check.values()))
            assert vals and all(isinstance(v, str) and v.strip() for v in vals)
        assert judge(_right(check), check), (q["id"], check)
        assert not judge(_wrong(check), check), (q["id"], check)


@needs_data
def test_stable_ids():
    assert [q["id"] for q in questions(DEFAULT_DATA, "HDFS")] == [q["id"] for q in _qs("HDFS")]


@needs_data
@pytest.mark.parametrize("system", SYSTEMS)
def test_counts_and_times_agree_with_plain_grep(system):
    raw = _raw(system)
    for q in _en1(system, "count-param"):
        p, v = re.match(r'How many "(.*)" lines mention (\S+)\?$', q["question"]).groups()
        n = sum(1 for line in raw if p.lower() in line and v.lower() in line)
        assert n == q["check"]["number"], q
    for kind, pick in (("first-time", 0), ("last-time", -1)):
        for q in _en1(system, kind):
            p = re.search(r'"(.*)"', q["question"]).group(1).lower()
            line = [line for line in raw if p in line][pick]
            assert any(a.lower() in line for a in q["check"]["any_of"]), (q, line)
    for q in _en1(system, "lookup"):
        p, k = re.match(r'In the "(.*)" line that mentions (\S+),', q["question"]).groups()
        lines = [line for line in raw if p.lower() in line and k.lower() in line]
        assert len(lines) == 1 and q["check"]["any_of"][0].lower() in lines[0], q


def test_judge_numbers():
    assert judge("There were 1,234 lines.", {"number": 1234})
    assert judge("共1234行", {"number": 1234})
    assert judge("total: 1234.0", {"number": 1234})
    assert judge("max is 12345678 bytes", {"number": 12345678})
    assert judge("about 0.5 s", {"number": 0.5})
    assert not judge("There were 12345 lines.", {"number": 1234})
    assert not judge("There were 123 lines.", {"number": 1234})
    assert not judge("blk_1234 was seen", {"number": 1234})
    assert not judge("no number here", {"number": 3})


def test_judge_strings():
    assert judge("It  happened at\n15:16:01 on Jun 14", {"any_of": ["15:16:01", "x"]})
    assert judge("component DFS.FSNamesystem", {"any_of": ["dfs.FSNamesystem"]})
    assert not judge("at 15:16:02", {"any_of": ["15:16:01"]})
    assert judge("a and b", {"all_of": ["A", "b"]})
    assert not judge("a only", {"all_of": ["a", "b"]})


@needs_data
def test_cli_prints_json_lines(capsys):
    assert main(["--system", "Spark", "--data", str(DEFAULT_DATA)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows == _qs("Spark")


def test_other_columns(tmp_path):
    # a Proxifier-like system: Program instead of Component, no level column
    d = tmp_path / "Proxy"
    d.mkdir()
    raw, rows = [], ["LineId,Time,Program,Content,EventId,EventTemplate"]
    for i in range(40):
        prog = ["chrome.exe", "git.exe", "svchost.exe"][i % 3]
        host = f"host{i % 4}.example.com"
        t = f"[10.30 16:{i // 10:02d}:{i % 60:02d}]"
        if i % 2:
            content = f"{host}:443 close, {100 + i * 7} bytes sent, {i} bytes received"
            tpl, eid = "<*>:<*> close, <*> bytes sent, <*> bytes received", "E1"
        else:
            content = f"{host}:80 open through proxy proxy.cse.cuhk.edu.hk:5070 HTTPS"
            tpl, eid = "<*>:<*> open through proxy <*>:<*> HTTPS", "E2"
        raw.append(f"{t} {prog} - {content}")
        rows.append(f'{i + 1},"{t}",{prog},"{content}",{eid},"{tpl}"')
    (d / "Proxy_2k.log").write_text("\n".join(raw) + "\n")
    (d / "Proxy_2k.log_structured.csv").write_text("\n".join(rows) + "\n")
    qs = questions(tmp_path, "Proxy")
    kinds = {q["kind"] for q in qs}
    assert {"count-component", "top-component", "count-param", "max-param"} <= kinds
    assert "count-level" not in kinds
    for q in qs:
        assert judge(_right(q["check"]), q["check"]) and not judge(_wrong(q["check"]), q["check"])

"""tools/bench/qa_blind3.py: the third blind question set (a helper's, written without reading the code)
builds from the raw logs of two tune systems only, splits into a tuned and a held part by its fixed
rule, and one gold agrees with a recount done here another way. No model."""

from __future__ import annotations

import collections

import pytest

from tools.bench import qa_blind3 as qb
from tools.bench import qa_questions as qq

pytestmark = pytest.mark.skipif(not qq.DEFAULT_DATA.is_dir(), reason="no shared/data/loghub")


def test_it_builds_from_two_tune_systems_and_splits_by_its_rule():
    qb.DATA = qq.DEFAULT_DATA
    every = qb.build()
    qb.validate(every)
    assert len(every) == 48 and {q["system"] for q in every} == {"Apache", "Linux"}
    assert collections.Counter(qb.part(q) for q in every) == {"tune": 24, "held": 24}
    assert {q["kind"] for q in every if qb.part(q) == "held"} == {q["kind"] for q in every}
    q = {q["id"]: q for q in every}["blind3-Linux-08"]          # ssh auth failures from one address
    assert "218.188.2.4" in q["question"]
    lines = (qq.DEFAULT_DATA / "Linux" / "Linux_2k.log").read_text(encoding="utf-8").splitlines()
    assert q["check"]["number"] == sum("authentication failure" in ln and ln.rstrip().endswith("rhost=218.188.2.4")
                                       for ln in lines)

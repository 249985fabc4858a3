"""tools/bench/qa_blind2.py: the second blind question set (a helper's, written without reading the code)
builds from the raw logs of the three tune systems only, and one gold agrees with a recount done here
another way. No model."""

from __future__ import annotations

import collections

import pytest

from tools.bench import qa_blind2 as qb
from tools.bench import qa_questions as qq

pytestmark = pytest.mark.skipif(not qq.DEFAULT_DATA.is_dir(), reason="no shared/data/loghub")


def test_it_builds_from_the_tune_systems_only():
    qb.DATA = qq.DEFAULT_DATA
    every = qb.build()
    assert len(every) == 48 and {q["system"] for q in every} == {"Hadoop", "OpenSSH", "Spark"}
    assert collections.Counter(q["lang"] for q in every) == {"en": 24, "zh": 24}
    by_id = {q["id"]: q for q in every}
    q = by_id["b2-OpenSSH-count-2"]           # "10:00 到 10:30 之间，Failed password 一共出现了几次？"
    assert "10:00" in q["question"] and "10:30" in q["question"] and "Failed password" in q["question"]
    lines = (qq.DEFAULT_DATA / "OpenSSH" / "OpenSSH_2k.log").read_text(encoding="utf-8").splitlines()
    assert q["check"]["number"] == sum("Failed password" in ln and "10:00:00" <= ln.split()[2] <= "10:30:00" for ln in lines)

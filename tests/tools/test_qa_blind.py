"""tools/bench/qa_blind.py: the blind question set (written by a helper that had not read the code) builds
from the data, its two parts split the systems, and a few golds agree with a recount over the raw lines
done here another way. No model."""

from __future__ import annotations

import re

import pytest

from tools.bench import qa_blind as qb
from tools.bench import qa_questions as qq

pytestmark = pytest.mark.skipif(not qq.DEFAULT_DATA.is_dir(), reason="no shared/data/loghub")


@pytest.fixture(scope="module")
def every() -> list[dict]:
    return qb.build(qq.DEFAULT_DATA)


def test_the_parts_split_the_systems_and_the_questions(every):
    tune, held = qb.build(qq.DEFAULT_DATA, qb.PARTS["tune"]), qb.build(qq.DEFAULT_DATA, qb.PARTS["held"])
    assert not set(qb.PARTS["tune"]) & set(qb.PARTS["held"])
    assert sorted(q["id"] for q in tune + held) == sorted(q["id"] for q in every)
    assert {q["lang"] for q in tune} == {q["lang"] for q in held} == {"en", "zh"}
    for q in every:
        assert set(q["check"]) <= {"number", "any_of", "all_of"} and q["check"]


def test_golds_agree_with_a_recount(every):
    """Counts of a quoted phrase, recounted as whole-line substring matches over the raw file."""
    by_id = {q["id"]: q for q in every}
    ssh = (qq.DEFAULT_DATA / "OpenSSH" / "OpenSSH_2k.log").read_text(encoding="utf-8").splitlines()
    q = by_id["fresh-OpenSSH-count-2"]
    assert "Closed due to user request" in q["question"]
    assert q["check"]["number"] == sum("Received disconnect" in ln and "Closed due to user request" in ln for ln in ssh)
    q = by_id["fresh-OpenSSH-min-1"]
    ports = [int(m.group(1)) for ln in ssh if "Failed password for root from 187.141.143.180" in ln
             for m in [re.search(r"port (\d+)", ln)]]
    assert q["check"]["number"] == min(ports)

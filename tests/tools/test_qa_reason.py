"""tools/bench/qa_reason.py: the conditional aggregation set (a helper's, written without reading the code)
builds from the raw logs of three tune systems only, splits by its fixed rule, and one gold agrees with a
recount done here another way (from the loghub structured CSV, not the raw lines). No model."""

from __future__ import annotations

import collections
import csv

import pytest

from tools.bench import qa_questions as qq
from tools.bench import qa_reason as qr
from tools.bench.split import TUNE

pytestmark = pytest.mark.skipif(not qq.DEFAULT_DATA.is_dir(), reason="no shared/data/loghub")


def test_it_builds_from_tune_systems_and_splits_by_its_rule():
    qr.DATA = qq.DEFAULT_DATA
    every = qr.build()
    qr.validate(every)
    assert len(every) == 40
    assert {q["system"] for q in every} == set(qr.SYSTEMS) <= set(TUNE)
    parts = collections.Counter(qr.part(q) for q in every)
    assert parts["tune"] and parts["held"] and sum(parts.values()) == len(every)
    q = {q["id"]: q for q in every}["reason-Linux-2"]        # largest pid of ssh auth failures from one address
    with open(qq.DEFAULT_DATA / "Linux" / "Linux_2k.log_structured.csv", encoding="utf-8", newline="") as f:
        pids = [int(row["PID"]) for row in csv.DictReader(f)
                if row["Component"] == "sshd(pam_unix)" and row["Content"].startswith("authentication failure")
                and "rhost=150.183.249.110" in row["Content"].split()]
    assert pids
    assert q["check"] == {"number": max(pids)}

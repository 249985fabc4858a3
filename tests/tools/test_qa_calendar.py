"""tools/bench/qa_calendar.py: the calendar and most-common-value set (a helper's, written without reading
the code) builds from the raw logs of the five tune systems only, splits by its fixed rule, and one gold
agrees with a recount done here another way. No model."""

from __future__ import annotations

import collections

import pytest

from tools.bench import qa_calendar as qc
from tools.bench import qa_questions as qq
from tools.bench.split import TUNE

pytestmark = pytest.mark.skipif(not qq.DEFAULT_DATA.is_dir(), reason="no shared/data/loghub")


def test_it_builds_from_tune_systems_and_splits_by_its_rule():
    qc.DATA = qq.DEFAULT_DATA
    every = qc.build()
    qc.validate(every)
    assert {q["system"] for q in every} == set(TUNE)
    parts = collections.Counter(qc.part(q) for q in every)
    assert parts["tune"] and parts["held"] and sum(parts.values()) == len(every)
    q = {q["id"]: q for q in every}["cal-Linux-2"]          # the day with the most authentication failures
    days = collections.Counter(" ".join(ln.split()[:2]) for ln in
                               (qq.DEFAULT_DATA / "Linux" / "Linux_2k.log").read_text(encoding="utf-8").splitlines()
                               if "authentication failure" in ln)
    month, day = days.most_common(1)[0][0].split()
    assert f"{month} {day}" in q["check"]["any_of"]

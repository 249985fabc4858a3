"""tools/bench/qa_fleet.py's questions: at least 30 across the three boxes, both languages, every kind the issue
names, and answers that follow from the raw lines (recounted here another way)."""

from __future__ import annotations

import re

import pytest

from tools.bench import qa_fleet
from tools.bench import qa_questions as qq

pytestmark = pytest.mark.skipif(not qq.DEFAULT_DATA.is_dir(), reason="the Loghub samples are not here")


@pytest.fixture(scope="module")
def questions():
    return qa_fleet.build()


def test_enough_questions_of_every_kind_in_both_languages(questions):
    assert len(questions) >= qa_fleet.MIN_QUESTIONS
    assert {q["kind"] for q in questions} == {"count", "top-k", "first-last"}
    assert sum(q["lang"] == "zh" for q in questions) >= 10 and sum(q["lang"] == "en" for q in questions) >= 10
    assert {q["system"] for q in questions} == {*qa_fleet.BOXES, "plant"}
    for q in questions:
        if q["system"] != "plant":
            assert q["system"] in q["question"]           # a per-box question names its box


def test_counts_and_the_box_with_the_most_follow_from_the_lines(questions):
    raw = {b: qq.load_system(qq.DEFAULT_DATA, s)[0] for b, s in qa_fleet.BOXES.items()}
    for q in questions:
        quoted = re.search(r'"([^"]+)"|“([^”]+)”', q["question"])
        text = quoted.group(1) or quoted.group(2)
        if q["kind"] == "count":
            assert q["check"]["number"] == sum(text in ln for ln in raw[q["system"]]), q["question"]
        elif q["kind"] == "top-k":
            rx = re.compile(r"\b" + re.escape(text) + r"\b", re.I)
            n = {b: sum(bool(rx.search(ln)) for ln in lines) for b, lines in raw.items()}
            assert q["check"]["any_of"] == [max(n, key=n.get)], (q["question"], n)

"""An answer never writes one run of words a third time (gateway.serve.answer.alike): lines of one kind
past the second keep only what differs, an answer cut at max_tokens writes a run once, a listing that
goes on is ended by the watch of its tokens, and the plan's check applies both."""
from __future__ import annotations

import re
from collections import Counter

from gateway.ingest.record import LogRecord
from gateway.pipeline.fields import LineFields
from gateway.pipeline.query import QuerySurface
from gateway.pipeline.store import Store
from gateway.serve.answer import alike
from gateway.serve.answer.plan import QueryPlan
from tests.helpers import PlanTool

HEADER = "Dec 10 09:12:38 LabSZ sshd[24497]: "
LISTING = ("3 lines match:\n"
           f"- {HEADER}input_userauth_request: invalid user guest [preauth]\n"
           f"- {HEADER}Invalid user guest from 103.99.0.122\n"
           f"- {HEADER}Failed password for invalid user guest from 103.99.0.122 port 55028 ssh2")


def _most_written(text: str, n: int = alike.RUN) -> int:
    """How often the text's most written run of n words/marks occurs (an independent count: every
    position, overlaps included)."""
    w = re.findall(r"[A-Za-z0-9_]+|[^\sA-Za-z0-9_]", text)
    return max(Counter(tuple(w[i:i + n]) for i in range(len(w) - n + 1)).values(), default=0)


def test_a_third_line_of_one_header_keeps_what_differs():
    assert _most_written(LISTING) == 3
    out = alike.fold(LISTING)
    assert _most_written(out) == 2
    lines = out.split("\n")
    assert lines[:3] == LISTING.split("\n")[:3]                      # the first two lines whole
    assert "…" in lines[3] and lines[3].endswith("Failed password for invalid user guest from 103.99.0.122 port 55028 ssh2")
    assert HEADER.strip() not in lines[3]


def test_an_answer_without_a_repeat_is_left_as_it_is():
    text = "2 lines match:\n- " + HEADER + "Invalid user guest\n- Dec 10 10:01:02 LabSZ sshd[1]: Accepted password for fztu"
    assert alike.fold(text) == text
    assert alike.fold("共有 3 行：加热区 2 温度过高，加热区 2 温度过高。") == "共有 3 行：加热区 2 温度过高，加热区 2 温度过高。"


def test_an_answer_that_ran_out_writes_a_run_once():
    text = "\n".join(f"- {HEADER}PacketResponder {i} for block blk_{i} terminating" for i in range(3))
    assert _most_written(alike.fold(text, times=1)) == 1
    assert _most_written(alike.fold(text)) == 2
    assert alike.fold(text, times=1).count("\n") == 2                  # line breaks inside a cut are kept


def test_chinese_characters_are_units():
    zh = "加热区二号温度传感器读数过高请检查"       # 17 characters: runs of 10 of them repeat
    text = "\n".join([f"- {zh} A", f"- {zh} B", f"- {zh} C"])
    out = alike.fold(text)
    assert out.split("\n")[2].startswith("- …") and out.endswith("C")


def _watch(text: str) -> tuple[str, bool]:
    """The text fed to a Watch one character a token; the part written when it said stop."""
    w = alike.Watch(lambda t: t.encode())
    for i, ch in enumerate(text):
        if not w(ch):
            return text[:i + 1], True
    return text, False


def test_a_listing_that_goes_on_is_ended_at_its_next_line():
    rows = [f"- {HEADER}PacketResponder {i} for block blk_{i} terminating" for i in range(6)]
    written, stopped = _watch("\n".join(["6 lines:", *rows]))
    assert stopped
    # two whole lines, then MAX_CUT_LINES lines that each needed a cut, then the one it stopped in
    assert written.count("\n") == 1 + 2 + alike.MAX_CUT_LINES
    shown = alike.fold(alike.ended(written))
    assert shown.endswith("\n…") and "blk_4" not in shown and "blk_3" in shown
    assert _most_written(shown) == 2


def test_the_watch_lets_a_short_listing_and_prose_go():
    assert _watch(LISTING) == (LISTING, False)
    prose = "The heater in zone 2 ran hot twice; the operator cooled it down and restarted the line."
    assert _watch(prose) == (prose, False)


def test_the_plans_check_folds_its_answer(tmp_path):
    """QueryPlan.check: the shown answer writes no run a third time; a watched end drops the line being
    written; an answer that ran out writes a run once."""
    rows = [LISTING.split("\n")[i][2:] for i in (1, 2, 3)]
    store = Store(tmp_path / "s.db")
    store.append([LogRecord(ts=1.7e9 + i, source="t", host="LabSZ", severity=6, text=t) for i, t in enumerate(rows)],
                 [None] * 3, [LineFields(component="sshd") for _ in rows])
    s = QuerySurface(store.path)
    q = "What happened to user guest?"
    plan = QueryPlan(PlanTool(s), [{"role": "user", "content": q}], q, None, [])
    plan.finish('lines", "text": "guest"}')
    assert plan.result["count"] == 3
    assert _most_written(plan.check(LISTING).text) == 2
    plan.ended = True
    assert plan.check(LISTING + "\n- " + HEADER + "Failed").text.endswith("\n…")
    plan.ended, plan.ran_out = False, True
    assert _most_written(plan.check(LISTING).text) == 1
    s.close()
    store.close()


def test_an_answer_cut_at_its_end_time_keeps_what_it_wrote():
    assert alike.cut_short("Block 7 was deleted. It was on 10.0.0.1 and ") == "Block 7 was deleted. It was on 10.0.0.1 and …"
    assert alike.cut_short("共 3 行。其中最多的是") == "共 3 行。其中最多的是 …"

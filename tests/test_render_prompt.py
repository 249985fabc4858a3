"""The query's result as the answer's prompt says it (render.render_result): a line's time said once,
lines of one second under their time once, the result clipped by what it costs in tokens."""

from __future__ import annotations

from gateway.serve.answer import render

T0 = 1497038471.0          # 2017-06-09 20:01:11 UTC, a Spark line's "17/06/09 20:01:11"


def _spark(i: int, t: float = T0, written: str = "17/06/09 20:01:11") -> dict:
    return {"id": 20 - i, "time": t, "time_text": written, "component": "executor.Executor", "level": "info",
            "text": f"{written} INFO executor.Executor: Running task {i}.0 in stage 29.0 (TID {1350 + i})"}


def test_a_line_that_writes_its_time_in_another_form_says_it_once():
    """The ISO time before the line, the line from past its own "17/06/09 20:01:11"; a line whose written
    time is the one shown (no year) or holds it (milliseconds) is said as written, with no time before it."""
    shown = render.render_result({"call": {"op": "lines"}, "count": 1, "lines": [_spark(1)]})
    assert "- at 2017-06-09 20:01:11: INFO executor.Executor: Running task 1.0" in shown and "17/06/09" not in shown
    sshd = {"id": 1, "time": T0, "time_text": "Dec 10 06:55:46", "text": "Dec 10 06:55:46 LabSZ sshd[24200]: x"}
    assert render.render_result({"call": {"op": "lines"}, "count": 1, "lines": [sshd]}).endswith(
        "\n- Dec 10 06:55:46 LabSZ sshd[24200]: x")
    ms = {"id": 2, "time": 1445191445.127, "time_text": "2015-10-18 18:04:05,127",
          "text": "2015-10-18 18:04:05,127 INFO [main] a.b.C: done", "component": "a.b.C"}
    assert render.render_result({"call": {"op": "lines"}, "count": 1, "lines": [ms]}).endswith(
        "\n- 2015-10-18 18:04:05,127 INFO [main] a.b.C: done")


def test_lines_of_one_second_are_listed_under_their_time_once():
    lines = [_spark(i) for i in range(4)] + [_spark(9, T0 - 5, "17/06/09 20:01:06")]
    shown = render.render_result({"call": {"op": "lines"}, "count": 5, "lines": lines})
    assert shown.count("2017-06-09 20:01:11") == 1 and "\n- at 2017-06-09 20:01:11:\n  - INFO executor." in shown
    assert all(f"\n  - INFO executor.Executor: Running task {i}.0 in stage 29.0" in shown for i in range(4))
    assert shown.endswith("\n- at 2017-06-09 20:01:06: INFO executor.Executor: Running task 9.0 in stage 29.0 (TID 1359)")


def test_the_result_is_clipped_by_its_tokens_not_its_characters():
    """A listing of ids and numbers (a token a digit) is cut shorter, in characters, than one of words;
    each within RESULT_TOKENS as counted from the text, never past it by more than the mark."""
    def listing(text: str) -> str:
        lines = [{"id": i, "time": None, "time_text": None, "text": text.format(i=i)} for i in range(60)]
        return render.render_result({"call": {"op": "lines"}, "count": 60, "lines": lines})
    ids, words = listing("blk_{i}38865049064139660 4096 1024"), listing("the pump on line {i} started again today")
    assert ids.endswith("...(clipped)") and words.endswith("...(clipped)")
    assert len(ids) < len(words) / 2
    for shown in (ids, words):
        kept = shown[:-len("...(clipped)")]
        digits = sum(c.isdigit() for c in kept)
        assert render.RESULT_TOKENS - 1 <= digits + (len(kept) - digits) / 4 <= render.RESULT_TOKENS

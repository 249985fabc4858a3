"""An answer's prompt fitted to its job's deadline (serve/query_job._answer_prompt): a listing shows fewer
of its lines, newest kept, when the measured prefill rate would not read them all in the time left; an
idle engine shows every line, and a result that is no listing is never cut."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from gateway.ingest.record import LogRecord
from gateway.pipeline.fields import LineFields, named_params
from gateway.pipeline.query import QuerySurface
from gateway.pipeline.store import Store
from gateway.serve.admission import Admission
from gateway.serve.answer.call import ANSWER_DUE_MS, TYPICAL_ANSWER_TOKENS
from gateway.serve.answer.evidence import Evidence
from gateway.serve.answer.plan import QueryPlan
from gateway.serve.jobs import TTFT, Job, JobHandle
from gateway.serve.prompts import Prompts
from gateway.serve.query_job import _answer_prompt
from tests.helpers import PlanTool

pytestmark = pytest.mark.models

FAULT = "ERROR <*> fault on axis <NUM> code <*>"


@pytest.fixture()
def surface(tmp_path):
    texts = [f"ERROR servo fault on axis {i} code E{200 + i}" for i in range(12)]
    recs = [LogRecord(ts=1.7e9 + i, source="t", host="line3", severity=3, text=t) for i, t in enumerate(texts)]
    store = Store(tmp_path / "s.db")
    store.append(recs, [1] * len(recs), [LineFields(template=FAULT, params=named_params(FAULT, t)) for t in texts])
    s = QuerySurface(store.path)
    yield s
    s.close()
    store.close()


@pytest.fixture(scope="module")
def prompts(smollm_path):
    return Prompts.for_model(smollm_path)


BUDGET_MS, DECODE_MS = 6_000.0, 50.0      # the fake job's budget (before ANSWER_DUE_MS) and admission's decode rate


def _answer(surface, prompts, call: str, prefill_ms: float, budget_ms: float = BUDGET_MS, backlog: int = 0,
            ev: Evidence | None = None):
    """The answer's prompt fitted on a fake engine thread: admission's measured rates, a stream with
    `backlog` tokens waiting (its reading takes half the time left when there are some)."""
    q = "Were there any faults on line 3?"
    plan = QueryPlan(PlanTool(surface), [{"role": "user", "content": q}], q, None, [], evidence=ev or Evidence())
    asked = prompts.chat_tokens(plan.turns, language_hint=False)
    et = SimpleNamespace(prompts=prompts, admission=Admission(prefill_ms, DECODE_MS),
                         config=SimpleNamespace(read_during_jobs_slack=0.5), reading=SimpleNamespace(enabled=True),
                         feed=SimpleNamespace(queue=SimpleNamespace(backlog_tokens=lambda: backlog)))
    job = Job("chat", [], 64, budget_ms, TTFT, JobHandle(), turns=plan.turns, submitted=time.monotonic())
    answer = _answer_prompt(et, job, plan, plan.finish(call), asked)
    return plan, prompts.tokenizer.decode(answer), len(answer) - len(asked)


def test_an_idle_engine_shows_the_whole_listing(surface, prompts):
    plan, text, _ = _answer(surface, prompts, 'lines"}', prefill_ms=1.0)
    assert len(plan.result["lines"]) == 10 and all(f"axis {i} " in text for i in range(2, 12))


def test_a_loaded_engine_shows_the_newest_lines_that_fit_the_time_left(surface, prompts):
    full = _answer(surface, prompts, 'lines"}', prefill_ms=1.0)[2]
    # a rate at which the budget, less the answer's decode, reads all but 60 of the listing's tokens
    prefill_ms = (BUDGET_MS - TYPICAL_ANSWER_TOKENS * DECODE_MS) / (full - 60)
    plan, text, new = _answer(surface, prompts, 'lines"}', prefill_ms=prefill_ms)
    assert new <= full - 60 < full
    assert "axis 11 " in text and "axis 2 " not in text         # newest first: the oldest left out
    assert len(plan.result["lines"]) == 10                      # the API's source keeps every line
    assert f"the newest {text.count('- at ')}," in text         # the prompt says how many it shows
    # the same rate with a stream waiting: half of that time is the stream's, fewer lines
    assert _answer(surface, prompts, 'lines"}', prefill_ms=prefill_ms, backlog=512)[2] <= (full - 60) / 2
    # no time at all: one line, never none
    _, text, _ = _answer(surface, prompts, 'lines"}', prefill_ms=1.0, budget_ms=0)
    assert text.count("- at ") == 1 and "axis 11 " in text


def test_a_count_is_never_cut(surface, prompts):
    plan, text, _ = _answer(surface, prompts, 'count"}', prefill_ms=1.0, budget_ms=0)
    assert plan.result["count"] == 12 and "12" in text


def test_the_answer_is_due_before_a_long_deadline(surface, prompts):
    """A job's deadline past ANSWER_DUE_MS: the prompt is fitted to the due time, not the deadline."""
    full = _answer(surface, prompts, 'lines"}', prefill_ms=1.0)[2]
    prefill_ms = (ANSWER_DUE_MS - TYPICAL_ANSWER_TOKENS * DECODE_MS) / (full - 60)
    assert _answer(surface, prompts, 'lines"}', prefill_ms=prefill_ms, budget_ms=60_000)[2] <= full - 60


def test_the_evidence_gives_up_lines_after_the_listing(surface, prompts):
    """The lines a question's rare tokens point at are cut too, after a listing keeps LISTED_KEPT lines:
    one stays, the first (the rarest tokens' line)."""
    lines = [surface.run({"op": "lines", "text": f"E20{i}"})["lines"][0] for i in (3, 5, 7)]
    ev = Evidence(["E203", "E205", "E207"], lines)
    plan, text, _ = _answer(surface, prompts, 'count", "text": "servo"}', prefill_ms=1.0, ev=ev)
    assert plan._ev_count == 3 and all(f"code E20{i}" in text for i in (3, 5, 7))
    plan, text, _ = _answer(surface, prompts, 'count", "text": "servo"}', prefill_ms=1.0, budget_ms=0, ev=ev)
    assert plan._ev_shown == 1 and "code E203" in text and "code E205" not in text and plan.result["count"] == 12
    plan, text, _ = _answer(surface, prompts, 'lines"}', prefill_ms=1.0, budget_ms=0, ev=ev)
    assert text.count("- at ") == 1 and plan._ev_shown == 1     # a listing's 1 line, after the evidence's

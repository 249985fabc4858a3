"""A chat question answered through one store query, on the engine thread: each ask of the question
(answer.question.asks) through its own call (decoded under the call grammar), the query, and the answer
written from its result, checked against it. Split from engine_thread.py; `et` is the EngineThread
whose engine, drafter, prompts, admission and query tool run it.
"""

from __future__ import annotations

import re
import time
from typing import Any, Callable, Sequence

from gateway.llm.sampling import SamplingParams
from gateway.llm.speculative import PREFILL_CHECK_TOKENS, GenerateResult, speculative_generate
from gateway.serve.answer.alike import Watch
from gateway.serve.answer.call import (ANSWER_DUE_MS, ANSWER_END_MS, ANSWER_MIN_TOKENS, MAX_CALL_TOKENS,
                                       TYPICAL_ANSWER_TOKENS, TYPICAL_QUERY_TOKENS)
from gateway.serve.answer.question import asks
from gateway.serve.jobs import Job, PromptTooLong, decode_to_due


def generate_query(et: Any, job: Job, on_token: Callable[[int], bool],
                   on_step: Callable[[], None] | None = None) -> GenerateResult:
    """Each ask of the question (question.asks) through its own call and answer, each answer checked
    against its own query; the answers joined (extra["checked"]). One ask: query_answer alone."""
    assert job.turns is not None
    parts = asks(job.turns[-1]["content"])
    if len(parts) == 1:
        return query_answer(et, job, job.turns, on_token, on_step)
    stops = et.tokenizer.stop_ids
    done: list[tuple[GenerateResult, str]] = []
    for part in parts:
        toks: list[int] = []

        def on_ask_token(tid: int) -> bool:
            if tid not in stops:
                toks.append(tid)
            return on_token(tid)

        # the asks before this one, and their answers, go before it: "which station had the most?" is
        # about the first ask's lines (grounded with its words too)
        said = [t for i, (r, text) in enumerate(done) for t in ({"role": "user", "content": parts[i]},
                                                                  {"role": "assistant", "content": text})]
        res = query_answer(et, job, [*job.turns[:-1], *said, {"role": "user", "content": part}], on_ask_token,
                           on_step, before=" ".join(parts[:len(done)]), last=len(done) == len(parts) - 1)
        if job.handle.cancelled or "plan" not in res.extra:
            return res
        done.append((res, res.extra["plan"].check(et.tokenizer.decode(toks)).text))
    last = done[-1][0]
    last.extra["checked"] = "\n".join(_not_said_again([text for _, text in done]))
    last.extra["queries"] = [r.extra["query"] for r, _ in done]
    last.tokens = [t for r, _ in done for t in r.tokens]
    return last


def query_answer(et: Any, job: Job, turns: list, on_token: Callable[[int], bool],
                 on_step: Callable[[], None] | None = None, before: str = "", last: bool = True) -> GenerateResult:
    """Question -> call (greedy, under the call grammar) -> the query -> answer from its result. The
    conversation is prefilled once: the answer's prompt shares its prefix with the call's. `before`: the
    message's earlier asks (QueryTool.plan); `last`: no ask comes after this one (the job's rest is then
    its call's prompt once planned, then this answer's prompt, and their decode: EngineThread.rest_known)."""
    assert et.query_tool is not None
    t_plan = time.perf_counter()
    plan = et.query_tool.plan(turns, before)
    plan_ms = (time.perf_counter() - t_plan) * 1000
    prompt = et.prompts.chat_tokens(plan.turns, language_hint=False) + plan.prefix_tokens
    stops = sorted(et.tokenizer.stop_ids)
    base = et.engine.scratch_len
    call: list[int] = []

    def on_call(tid: int) -> bool:
        call.append(tid)
        return not plan.mask.complete(call) and not job.handle.cancelled

    def keep_going() -> bool:      # an abandoned question stops at its next prompt chunk or token
        return not job.handle.cancelled

    call_room = et.n_scratch - base - len(prompt)     # a call is far shorter than its budget
    # The call's prompt (the question's grounding in it) is known: the rest is that prompt, what a query
    # typically adds for its answer, the call and the answer, not the typical question admission priced.
    planned = et.rest_known(len(prompt) + TYPICAL_QUERY_TOKENS,
                            decode_to_due(job.deadline_kind, job.max_tokens, True)) if last else None
    sees = et.engine.job_sees_stream
    et.engine.job_sees_stream = et.config.questions_see_stream    # read at the job's first scratch write
    try:
        t0, read_ms = time.perf_counter(), 0.0
        todo = prompt[:-1]
        for i in range(0, len(todo), PREFILL_CHECK_TOKENS):
            if i and on_step is not None:     # the stream between prompt chunks (its time left out)
                t1 = time.perf_counter()
                on_step()
                read_ms += (time.perf_counter() - t1) * 1000
            if not keep_going():
                return GenerateResult([], "", (time.perf_counter() - t0) * 1000, 0.0, len(prompt), "stop")
            et.engine.forward_scratch(todo[i:i + PREFILL_CHECK_TOKENS])
        call_prefill_ms = (time.perf_counter() - t0) * 1000 - read_ms
        et.admission.observe_prefill(len(prompt) - 1, call_prefill_ms)
        res = speculative_generate(et.engine, et.drafter, prompt, min(MAX_CALL_TOKENS, call_room), SamplingParams(), None,
                                   stop_tokens=stops, on_token=on_call, n_prompt_cached=len(prompt) - 1,
                                   logits_processor=plan.mask, on_step=on_step)
        et.admission.observe_decode(len(res.tokens), res.decode_ms)
        if not keep_going():
            return GenerateResult([], "", 0.0, res.decode_ms, len(prompt), "stop")
        t_query = time.perf_counter()
        answer = _answer_prompt(et, job, plan, plan.finish(plan.mask.text_bytes(call).decode("utf-8", "replace")),
                                prompt)
        query_ms = (time.perf_counter() - t_query) * 1000
        job.handle._emit({"type": "query", **plan.source()})
        room = et.n_scratch - base - len(answer)
        if room < 1:
            raise PromptTooLong(f"the answer's prompt ({len(answer)} tokens) does not fit engine.n_scratch")
        cached = min(_common_prefix(prompt[:-1], answer), len(answer) - 1)
        rest = et.rest_known(len(answer) - cached, decode_to_due(job.deadline_kind, job.max_tokens, True,
                                                                  called=True)) if last else None
        watch = Watch(et.tokenizer.token_bytes)     # a listing of lines alike ends early
        end, written = min(job.deadline, job.submitted + ANSWER_END_MS / 1000), [0]

        def on_answer_token(tid: int) -> bool:
            written[0] += 1         # past its end time, an answer of ANSWER_MIN_TOKENS stops (alike.cut_short)
            if written[0] > ANSWER_MIN_TOKENS and time.monotonic() > end and tid not in stops:
                plan.timed_out = True
                return False
            return on_token(tid) is not False and watch(tid)

        et.engine.rollback(base + cached)
        out = speculative_generate(et.engine, et.drafter, answer, min(job.max_tokens, room),
                                   SamplingParams(temperature=job.temperature, top_p=job.top_p), job.seed,
                                   stop_tokens=stops, on_token=on_answer_token, n_prompt_cached=cached,
                                   no_repeat_ngram=et.no_repeat_ngram, keep_going=keep_going, on_step=on_step)
        plan.ended, plan.ran_out = watch.stopped, out.finish_reason != "stop"
    finally:
        et.engine.rollback(base)
        et.engine.job_sees_stream = sees
    et.admission.observe_prefill(out.prefill_tokens, out.prefill_ms)
    et.admission.observe_decode(len(out.tokens), out.decode_ms)
    # where the question's time went (the stream read between its steps left out of each stage)
    timing = {"plan_ms": plan_ms, "call_prefill_ms": call_prefill_ms, "call_prompt_tokens": len(prompt),
              "call_ms": res.decode_ms, "query_ms": query_ms, "answer_prefill_ms": out.prefill_ms,
              "answer_prefill_tokens": out.prefill_tokens, "answer_decode_ms": out.decode_ms,
              "read_ms": read_ms + res.stats.step_hook_ms + out.stats.step_hook_ms}
    if planned is not None:
        timing["rest_planned"] = planned    # what reading inside the job priced its rest at once planned (ms)
    if rest is not None:
        timing["rest_priced"] = rest        # ... and once its answer's prompt was built
    out.extra["query"] = {**plan.source(), "call_tokens": len(call), "call_ms": round(res.decode_ms, 1),
                          "timing": {k: round(v, 1) for k, v in timing.items()}}
    out.extra["plan"] = plan
    out.prompt_tokens = len(answer)
    return out


def _answer_prompt(et: Any, job: Job, plan: Any, messages: list, asked: list[int]) -> list[int]:
    """The answer's prompt, with lines left out (plan.shorter: a listing's last, then the evidence's) while
    its new tokens (those past the call's prompt `asked`) would not be read by its due time (ANSWER_DUE_MS
    after the question came, the job's deadline when sooner) at the measured rates, the answer's decode
    and the stream's share of the time left set aside. A quick engine shows every line; a slow one or a
    loaded line answers on time from the newest lines."""
    answer = et.prompts.chat_tokens(messages, language_hint=False)
    keep = 1.0 - _reading_share(et)
    due = min(job.deadline, job.submitted + ANSWER_DUE_MS / 1000)
    left_ms = (due - time.monotonic()) * 1000 - TYPICAL_ANSWER_TOKENS * et.admission.decode_ms_per_tok
    room = keep * left_ms / et.admission.prefill_ms_per_tok
    while len(answer) - _common_prefix(asked, answer) > room and (shorter := plan.shorter()) is not None:
        answer = et.prompts.chat_tokens(shorter, language_hint=False)
    return answer


def _reading_share(et: Any) -> float:
    """Of a job's time left, what the stream's reading inside it may take (read_during_jobs_slack) while
    the stream has tokens waiting; none when it has none or reading during jobs is off."""
    if et.reading is None or not et.reading.enabled or et.feed.queue.backlog_tokens() <= 0:
        return 0.0
    return et.config.read_during_jobs_slack


_TOKEN = re.compile(r"[\u3400-\u9fff]|\w+")
SAID_AGAIN = 0.8          # an answer this much made of an earlier one's words says it again


_SENTENCE = re.compile(r".+?(?:[。！？!?]+|\.(?=\s|$)|\n|$)", re.S)     # "3.5" ends no sentence


def _not_said_again(answers: list[str]) -> list[str]:
    """The answers without what an earlier one said (a remark after the question mark, "give it to 1
    decimal", was answered as the ask before it): a sentence said before is left out of a later answer,
    and a later answer most of whose words are an earlier one's goes whole."""
    kept: list[str] = []
    for text in answers:
        if kept:
            said = {" ".join(x.split()) for k in kept for x in _SENTENCE.findall(k)}
            text = "".join(x for x in _SENTENCE.findall(text) if " ".join(x.split()) not in said).strip()
        words = [w.lower() for w in _TOKEN.findall(text)]
        before = {w.lower() for k in kept for w in _TOKEN.findall(k)}
        if not words or (kept and sum(w in before for w in words) >= SAID_AGAIN * len(words)):
            continue
        kept.append(text)
    return kept


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n

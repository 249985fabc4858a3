"""Reading the stream between a job's steps (issue 42 part 3): the decision (gateway/serve/job_reading.py)
and the decode loop's step hook (gateway/llm/speculative.py: on_step), with fakes."""

from __future__ import annotations

import time

from tests.fakes import ScratchLM

from gateway.llm.sampling import SamplingParams
from gateway.llm.speculative import PREFILL_CHECK_TOKENS, speculative_generate
from gateway.serve.job_reading import (DEADLINE, DEADLINE_SAFETY, EMPTY, LATE_DUE_FACTOR, LOST, READ, SHARE,
                                       JobClock, ReadingDuringJobs)

CHUNK = 32


def reading(enabled: bool = True, max_lost: int = 1024, share: float = 1.0) -> ReadingDuringJobs:
    return ReadingDuringJobs(enabled, max_lost, CHUNK, share)


def test_a_chunk_is_read_when_one_waits_and_the_deadline_has_room():
    r, now = reading(), 1000.0
    clock = JobClock(deadline=now + 10.0, work_ms=2000.0, started=now)
    assert r.decide(clock, 40, 0.5, 10.0, 0, now=now) == READ          # 320 ms + 1.25 * 2 s << 10 s
    assert r.decide(clock, 0, 0.0, 10.0, 0, now=now) == EMPTY
    assert r.decide(clock, 8, 0.5, 10.0, 0, now=now) == EMPTY           # a crumb: wait for a chunk ...
    assert r.decide(clock, 8, 1.5, 10.0, 0, now=now) == READ            # ... unless it has waited
    assert reading(enabled=False).decide(clock, 40, 5.0, 10.0, 0, now=now) == EMPTY
    r.read(clock, 40, 300.0)
    assert (r.chunks, r.tokens, clock.read_ms, clock.read_before_due_ms) == (1, 40, 300.0, 300.0)


def test_the_deadline_and_the_lost_view_stop_reading():
    r, now = reading(max_lost=100), 1000.0
    clock = JobClock(deadline=now + 3.0, work_ms=2000.0, started=now)
    # the clock's work left with its margin, plus the chunk priced at the first rate, fits the deadline; at
    # the doubled rate it does not (the check prices the chunk and the job's rest)
    assert r.decide(clock, 40, 0.0, 10.0, 0, now=now) == READ
    assert r.decide(clock, 40, 0.0, 20.0, 0, now=now) == DEADLINE
    # work done counts down the remaining estimate ...
    later = now + 1.5
    assert clock.remaining_ms(later) == 500.0
    assert r.decide(clock, 40, 0.0, 10.0, 0, now=later) == READ
    # ... reading inside the job does not
    clock.read_ms = 1000.0
    assert DEADLINE_SAFETY * clock.remaining_ms(later) == 1.25 * 1500.0
    assert r.decide(clock, 40, 0.0, 10.0, 0, now=later) == DEADLINE
    clock.due_passed = True                                             # the first token is out
    assert r.decide(clock, 40, 0.0, 1000.0, 0, now=now + 2.9) == READ
    assert r.decide(clock, 40, 0.0, 10.0, 80, now=now) == LOST          # 80 + 32 > 100
    assert (r.skipped_deadline, r.skipped_lost) == (2, 1)
    st = r.stats()
    assert st["stream_chunks_during_jobs"] == 0 and st["read_during_jobs"] is True


def test_reading_takes_at_most_its_share_of_a_jobs_time():
    """A line faster than the engine reads would starve the job: reading stops at its share."""
    r, now = reading(share=0.5), 1000.0
    clock = JobClock(deadline=now + 600.0, work_ms=2000.0, started=now, due_passed=True)
    assert r.decide(clock, 64, 0.0, 10.0, 0, now=now) == SHARE          # nothing worked yet
    assert r.decide(clock, 64, 0.0, 10.0, 0, now=now + 0.32) == READ    # 320 ms of work: a 320 ms chunk
    r.read(clock, 32, 320.0)
    assert clock.read_before_due_ms == 0.0                              # after the first token
    assert r.decide(clock, 64, 0.0, 10.0, 0, now=now + 0.64) == SHARE   # 320 read, 320 worked
    assert r.decide(clock, 64, 0.0, 10.0, 0, now=now + 0.96) == READ    # 640 worked
    assert r.skipped_share == 2 and reading(share=1.0).decide(clock, 64, 0.0, 10.0, 0, now=now) == READ


class TinyLM(ScratchLM):
    def __init__(self) -> None:
        super().__init__(7, 2.0, 4)


def test_the_step_hook_runs_between_steps_and_changes_no_token():
    prompt = [i % 4 for i in range(2 * PREFILL_CHECK_TOKENS + 5)]
    plain = speculative_generate(TinyLM(), None, prompt, 8, SamplingParams())
    calls: list[int] = []
    target = TinyLM()

    def hook() -> None:
        calls.append(target.scratch_len)
        time.sleep(0.01)

    hooked = speculative_generate(target, None, prompt, 8, SamplingParams(), on_step=hook)
    assert hooked.tokens == plain.tokens and len(plain.tokens) == 8
    # after each prompt chunk but the last, then after each decode step but the last
    assert calls[:2] == [PREFILL_CHECK_TOKENS, 2 * PREFILL_CHECK_TOKENS]
    assert len(calls) == 2 + 7
    assert hooked.stats.step_hook_ms >= 9 * 10.0
    # the hook's time is not the job's: prefill and decode figures leave it out
    assert hooked.prefill_ms < 20.0 + plain.prefill_ms and hooked.decode_ms < 70.0 + plain.decode_ms
    assert target.scratch_len == 0


def test_an_engine_without_reading_during_jobs_says_so():
    """The CUDA engine's native object reports reads_during_jobs False (one built before it, nothing):
    gateway.llm.engine.Engine passes that on, and the engine thread then reads between jobs only."""
    from gateway.llm.engine import Engine

    e = object.__new__(Engine)
    e._e = type("Native", (), {})()
    assert e.reads_during_jobs is False and e.job_view_lost == 0
    e._e = type("Native", (), {"reads_during_jobs": False, "job_view_lost": 0})()
    assert e.reads_during_jobs is False


def test_a_due_stream_reads_in_the_margin_but_not_past_the_jobs_deadline():
    """A stream whose lag reached due_lag_s is read past the job's deadline point (the slack kept as the
    answer's margin), up to the job's own deadline less one more chunk's cost (a chunk cannot be cut once
    started), not past it."""
    r, now = ReadingDuringJobs(True, 1024, CHUNK, 1.0, due_lag_s=10.0), 1000.0
    # estimated 4 s of work; the deadline point at 5 s, the job's own deadline at 8 s
    clock = JobClock(deadline=now + 5.0, work_ms=4000.0, started=now, hard=now + 8.0)
    at = now + 2.0                                                        # 2 s worked, 2 s to come
    assert r.decide(clock, 40, 2.0, 10.0, 0, now=at) == READ              # 2.32 + 2.5 < 5
    clock.read_ms = 1000.0                                                # 1 s of it read: 3 s to come
    assert r.decide(clock, 40, 2.0, 10.0, 0, now=at) == DEADLINE          # 2.32 + 3.75 > 5 ...
    assert r.decide(clock, 40, 12.0, 10.0, 0, now=at) == READ             # ... but due: 6.07 + 0.32 < 8
    clock.read_ms = 4000.0                                                # at 7.5 s, 3.5 s worked
    assert r.decide(clock, 40, 12.0, 10.0, 0, now=now + 7.5) == DEADLINE  # due, but 7.82 + 0.625 > 8
    clock.read_ms = 3600.0                                                # at 7.5 s, 3.9 s worked
    # the chunk (0.32 s) and the rest's margin (0.125 s) end at 7.945 s: the chunk's cost again is no margin
    assert r.decide(clock, 40, 12.0, 10.0, 0, now=now + 7.5) == DEADLINE
    assert (r.skipped_deadline, r.read_due) == (3, 1)
    assert r.stats()["reads_stream_due"] == 1
    assert reading().due_lag_s == float("inf")                             # not set: never due


def test_a_job_past_its_estimate_reads_only_an_overdue_stream_once_late():
    """Past its estimate a job's rest is unknown: no room for reading, not even for a due stream, while
    its own deadline is ahead. Once that has passed, a person still waits for it: it reads only a stream
    overdue (lag at LATE_DUE_FACTOR times the due lag), the share still bounding it."""
    r, now = ReadingDuringJobs(True, 1024, CHUNK, 0.5, due_lag_s=10.0), 1000.0
    overdue = LATE_DUE_FACTOR * 10.0
    clock = JobClock(deadline=now + 2.0, work_ms=1000.0, started=now, hard=now + 12.0)
    assert r.decide(clock, 40, 2.0, 10.0, 0, now=now + 0.5) == READ       # 320 ms + 1.25 * 500 ms < 2 s
    assert r.decide(clock, 40, 2.0, 10.0, 0, now=now + 1.5) == DEADLINE   # past its estimate
    assert r.decide(clock, 40, 30.0, 10.0, 0, now=now + 1.5) == DEADLINE  # overdue, but the deadline is ahead
    assert r.decide(clock, 40, 10.0, 10.0, 0, now=now + 12.5) == DEADLINE  # late and due, not overdue
    assert r.decide(clock, 40, overdue - 0.1, 10.0, 0, now=now + 12.5) == DEADLINE
    assert r.decide(clock, 40, overdue, 10.0, 0, now=now + 12.5) == READ   # late and overdue
    r.read(clock, 32, 12000.0)
    assert r.decide(clock, 40, 30.0, 10.0, 0, now=now + 12.6) == SHARE    # ... within the share
    assert (r.skipped_deadline, r.read_due, r.skipped_share) == (4, 1, 1)


def test_a_jobs_rest_once_known_prices_its_reading():
    """Once the answer's prompt is built the job's rest is known (JobClock.rest_known): a job that
    overran its estimate but has room for its rest reads again; one whose rest is longer than the
    estimate priced stops reading where that rest does not fit."""
    r, now = ReadingDuringJobs(True, 1024, CHUNK, 1.0), 1000.0
    over = JobClock(deadline=now + 8.0, work_ms=3000.0, started=now, hard=now + 12.0)
    assert r.decide(over, 40, 0.5, 10.0, 0, now=now + 4.0) == DEADLINE     # past its estimate: rest unknown
    over.rest_known(now + 4.0, 1000.0)
    assert over.remaining_ms(now + 4.0) == 1000.0
    assert r.decide(over, 40, 0.5, 10.0, 0, now=now + 4.0) == READ         # 4 s + 320 ms + 1.25 s < 8 s
    long = JobClock(deadline=now + 8.0, work_ms=6000.0, started=now, hard=now + 12.0)
    assert r.decide(long, 40, 0.5, 10.0, 0, now=now + 2.0) == READ         # 2.32 s + 1.25 * 4 s < 8 s
    long.rest_known(now + 2.0, 5000.0)                                     # the prompt left is longer
    assert r.decide(long, 40, 0.5, 10.0, 0, now=now + 2.0) == DEADLINE     # 2.32 s + 1.25 * 5 s > 8 s
    long.read_ms = 1000.0                                                  # reading is not the job's work
    long.rest_known(now + 3.0, 1000.0)
    assert long.work_ms == 2000.0 + 1000.0


def test_a_held_answer_is_due_at_its_end():
    """A query's answer is checked before the client sees it: its deadline point is the answer's end,
    priced as the call and a typical answer; an answer that streams is due at its first token."""
    from gateway.serve.answer.call import TYPICAL_ANSWER_TOKENS, TYPICAL_CALL_TOKENS
    from gateway.serve.jobs import COMPLETE, TTFT, Job, JobHandle, decode_to_due

    assert decode_to_due(TTFT, 256, False) == 1
    assert decode_to_due(TTFT, 256, True) == TYPICAL_CALL_TOKENS + TYPICAL_ANSWER_TOKENS
    assert decode_to_due(TTFT, 8, True) == TYPICAL_CALL_TOKENS + 8
    assert decode_to_due(COMPLETE, 64, False) == 64
    assert decode_to_due(TTFT, 256, True, called=True) == TYPICAL_ANSWER_TOKENS    # the call is done
    plain = Job("chat", [1], 64, 1000.0, TTFT, JobHandle(None))
    held = Job("chat", [1], 64, 1000.0, TTFT, JobHandle(None), turns=[{"role": "user", "content": "?"}])
    explain = Job("explain", [1], 64, 1000.0, COMPLETE, JobHandle(None))
    assert (plain.held, held.held) == (False, True)
    assert plain.due_at(5.0, 9.0) == 5.0 and held.due_at(5.0, 9.0) == 9.0 and explain.due_at(5.0, 9.0) == 9.0
    assert plain.due_at(None, 9.0) == 9.0                                   # no token: due at its end


def test_reading_inside_a_job_borrows_only_its_share_of_the_slack():
    """The clock a job reads against ends at its estimated end plus read_during_jobs_slack of what its
    budget leaves past that estimate: the rest is the answer's margin (engine_thread._clock)."""
    from types import SimpleNamespace

    from gateway.serve.engine_thread import EngineThread

    class Estimates:
        def estimate_ms(self, prompt_tokens: int, decode_tokens: int) -> float:
            return 10.0 * prompt_tokens + 40.0 * decode_tokens

        def bias(self, kind: str) -> float:
            return 1.0

    def clock(slack: float, budget_s: float) -> tuple[JobClock, float]:
        et = SimpleNamespace(admission=Estimates(), config=SimpleNamespace(read_during_jobs_slack=slack))
        now = time.monotonic()
        job = SimpleNamespace(prompt=[0] * 100, turns=None, deadline_kind="total", max_tokens=50, kind="explain",
                              deadline=now + budget_s)
        return EngineThread._clock(et, job), job.deadline

    work_s = (10.0 * 100 + 40.0 * 50) / 1000                       # 3 s
    half, deadline = clock(0.5, 12.0)
    assert half.work_ms == 3000.0
    assert abs((half.deadline - half.started) - (work_s + 0.5 * (deadline - half.started - work_s))) < 0.05
    assert half.deadline < deadline - 4.0
    whole, deadline = clock(1.0, 12.0)
    assert abs(whole.deadline - deadline) < 1e-6                     # all the slack: the deadline itself
    none, _ = clock(0.0, 12.0)
    assert abs((none.deadline - none.started) - work_s) < 0.05       # no slack lent: the estimate's end
    # early in the job, most of its work still to come: a clock lending a tenth of the slack
    # has no room for a chunk where the whole slack still has
    tenth, _ = clock(0.1, 12.0)
    r = reading()
    assert r.decide(tenth, 40, 0.5, 10.0, 0, now=tenth.started + 0.5) == DEADLINE
    assert r.decide(whole, 40, 0.5, 10.0, 0, now=whole.started + 0.5) == READ

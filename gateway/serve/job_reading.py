"""Reading the stream while a job runs (issue 42, part 3): between a job's steps (prompt chunks, verify
steps) the engine thread prefills at most one chunk of the token queue into the stream, when the queue
holds a chunk's worth (or its oldest entry waits), the job's deadline has room for it at admission's
measured prefill cost, reading has taken at most `share` of the job's time (a job runs at most
1 / (1 - share) times as long: a line faster than the engine reads would otherwise starve it), and the
job has not lost too much of the stream it reads. Two deadlines meet here: the job's, and the stream's
(its reading lag reached `due_lag_s`). A stream that is due is read past the job's deadline point (the
slack it keeps as the answer's margin), within the same share, but not past the job's own deadline
less a chunk's cost: the lag's target is the appliance's own, a question's budget is what the person
waiting was promised.
A job past its estimate leaves no room (its rest is unknown) until its next prompt is built: a
question's rest is priced at its call's prompt once planned, then at its answer's prompt
(JobClock.rest_known), not at the typical question admission priced at its start. Once its deadline
has passed it is late whatever it does, but a person still waits for it, and each second read inside
it is one more second of waiting: it reads only an overdue stream (lag at
LATE_DUE_FACTOR times the due lag), so that a job far past its estimate does not hold the stream back
without bound. A late job with estimate left reads no due stream (its rest, priced against that
deadline, never fits).

The job keeps the stream view it started with (native/kv_cache.h, READING DURING A JOB): it never sees
the chunks read during it, and loses the view's entries the ring evicts meanwhile (at most max_lost).

Knows nothing about the engine or the queue: the engine thread asks `decide` and reports what it read.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

# The remaining work a job's deadline must still hold is its estimate times this: a chunk is read only
# where the estimate leaves that margin (admission's figures are EMAs, and a job's tail varies).
DEADLINE_SAFETY = 1.25
# A queue holding less than a chunk is read during a job once its oldest entry waited this long: short
# chunks cost nearly a full forward each, so the job's steps are not interleaved with crumbs.
PARTIAL_CHUNK_AFTER_S = 1.0
# A late job reads the stream only once its lag is this many times the due lag (see above).
LATE_DUE_FACTOR = 2.0

READ, EMPTY, DEADLINE, SHARE, LOST = "read", "empty", "deadline", "share", "lost"


@dataclass
class JobClock:
    """One job's account for the reading decision: when it started serving, what its work to the
    deadline point was estimated at, and how much reading was put inside it."""
    deadline: float            # monotonic time reading aims to leave the job done by (its deadline point at most)
    work_ms: float             # admission's estimate of the job's own work to that point
    started: float = field(default_factory=time.monotonic)
    hard: float = float("inf")   # the job's own deadline: a due stream is read up to it, not past it
    read_ms: float = 0.0       # stream reading done inside this job
    read_before_due_ms: float = 0.0   # ... before its deadline point (left out of the outcome)
    due_passed: bool = False   # a first-token job whose first token is out: no deadline left

    def worked_ms(self, now: float) -> float:
        """The job's own time so far (its reading left out)."""
        return max(0.0, (now - self.started) * 1000 - self.read_ms)

    def rest_known(self, now: float, rest_ms: float) -> None:
        """The job's own work left is known from here (a prompt of it is built: the rest is its prefill,
        what follows it and the decode at the measured rates; told again as each prompt is built): its
        estimate becomes the work done so far plus that, so a job that overran its estimate, or has a
        longer prompt left than the estimate priced, stops reading where the rest does not fit."""
        self.work_ms = self.worked_ms(now) + max(0.0, rest_ms)

    def remaining_ms(self, now: float) -> float:
        """The job's own work still to come before its deadline point (0 once it is passed)."""
        if self.due_passed:
            return 0.0
        return max(0.0, self.work_ms - self.worked_ms(now))


def _fits(now: float, chunk_ms: float, rest_ms: float, until: float) -> bool:
    """A chunk now, then the job's rest with its margin, ends by `until`."""
    return now * 1000 + chunk_ms + DEADLINE_SAFETY * rest_ms <= until * 1000


@dataclass
class ReadingDuringJobs:
    """The engine thread's switch, limits and counters (/api/stats engine section)."""
    enabled: bool
    max_lost: int                  # stream tokens a job's view may lose to the ring's eviction
    chunk_tokens: int              # the engine thread's prefill_chunk
    share: float                   # of a running job's time, reading may take at most this
    due_lag_s: float = float("inf")   # the stream's deadline: past this lag it is read despite the job's
    chunks: int = 0                # stream chunks read during jobs
    tokens: int = 0
    skipped_deadline: int = 0      # a chunk was waiting but the job's deadline had no room for it
    skipped_share: int = 0         # ... but reading had taken its share of the job's time
    skipped_lost: int = 0          # ... but the job's view had lost its share
    read_due: int = 0              # chunks read because the stream was due, where the deadline point had no room
    view_lost_tokens: int = 0      # view tokens jobs lost, summed at their ends

    def decide(self, clock: JobClock, backlog_tokens: int, lag_s: float, prefill_ms_per_tok: float,
               view_lost: int, now: float | None = None) -> str:
        """READ, or why not: EMPTY (no chunk's worth waiting), LOST, SHARE, DEADLINE. Counts the refusals."""
        if not self.enabled or backlog_tokens <= 0:
            return EMPTY
        if backlog_tokens < self.chunk_tokens and lag_s < PARTIAL_CHUNK_AFTER_S:
            return EMPTY
        if view_lost + self.chunk_tokens > self.max_lost:
            self.skipped_lost += 1
            return LOST
        now = time.monotonic() if now is None else now
        chunk_ms = min(backlog_tokens, self.chunk_tokens) * prefill_ms_per_tok
        if self.share < 1.0 and (clock.read_ms + chunk_ms) * (1.0 - self.share) > self.share * clock.worked_ms(now):
            self.skipped_share += 1
            return SHARE
        if clock.due_passed:
            return READ
        rest = clock.remaining_ms(now)
        if rest > 0 and _fits(now, chunk_ms, rest, clock.deadline):
            return READ
        if rest > 0:      # a started chunk cannot be cut, and its cost varies with the ring's state: the
            # job's own deadline, a promise to the person waiting, keeps one more chunk's cost as margin
            due = lag_s >= self.due_lag_s and _fits(now, 2 * chunk_ms, rest, clock.hard)
        else:
            due = now > clock.hard and lag_s >= LATE_DUE_FACTOR * self.due_lag_s
        if due:
            self.read_due += 1
            return READ
        self.skipped_deadline += 1
        return DEADLINE

    def read(self, clock: JobClock, n_tokens: int, ms: float) -> None:
        self.chunks += 1
        self.tokens += n_tokens
        clock.read_ms += ms
        if not clock.due_passed:
            clock.read_before_due_ms += ms

    def stats(self) -> dict:
        return {"read_during_jobs": self.enabled, "stream_chunks_during_jobs": self.chunks,
                "stream_tokens_during_jobs": self.tokens, "reads_skipped_deadline": self.skipped_deadline,
                "reads_stream_due": self.read_due,
                "reads_skipped_share": self.skipped_share,
                "reads_skipped_lost": self.skipped_lost, "job_view_lost_tokens": self.view_lost_tokens}

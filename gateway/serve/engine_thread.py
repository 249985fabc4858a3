"""The engine thread: owns the Engine and its KV cache; prefills the token queue into the stream
context (system prompt in the sink) and serves jobs (operator chat, alert explanations) from a
bounded priority queue, each forked in scratch and rolled back. Prompts come from serve/prompts.py
(the layout is described there). Knows nothing about HTTP or where alerts come from.
"""

from __future__ import annotations

import asyncio
import codecs
import logging
import queue
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence

from gateway.llm import kernel_plan
from gateway.llm.cpus import default_threads
from gateway.llm.drafters import make_drafter, resolve_draft_spec
from gateway.llm.constrained import Constraint, Grammar, LogitsMask, Vocabulary
from gateway.llm.engine import Engine, resolve_act_precision, select_backend
from gateway.llm.models import resolve_model
from gateway.llm.sampling import SamplingParams
from gateway.llm.speculative import PREFILL_CHECK_TOKENS, GenerateResult, SpecStats, speculative_generate
from gateway.pipeline.token_queue import ContextFeed
from gateway.serve.admission import Admission
from gateway.serve.job_reading import READ, JobClock, ReadingDuringJobs
from gateway.serve.jobs import (COMPLETE, PRIORITY, TTFT, Job, JobHandle, NotReady, PromptTooLong, QueueFull,
                                Refused, decode_to_due)
from gateway.serve.prompts import Prompts
from gateway.serve.query_job import generate_query, query_answer
from gateway.serve.answer.call import QUERY_PROMPT_TOKENS, TYPICAL_CALL_TOKENS, TYPICAL_QUERY_TOKENS
from gateway.serve.answer.tool import QueryTool
from gateway.serve.answer.question import Grounding

QUERY_MIN_ROOM = 256       # scratch left for question + answer beside a store query (else no query)
PROMPT_BUDGET_SHARE = 0.5   # of the first-token budget, for prefilling the prompt (quoted lines included)
log = logging.getLogger(__name__)

IDLE_WAIT_S = 0.05           # the loop wakes at least this often to tick the compactor
TICK_S = 0.5
SEED_GENERATE_TOKENS = 4     # a short generation at start-up seeds the admission EMAs
# An explanation running when an operator's question arrives stops at its next token or prompt chunk,
# rolls back and runs again after the question; at most this many times, so it is never starved.
MAX_PREEMPTIONS = 3


class EngineConfig(Protocol):
    """What the engine thread reads of gateway.settings.EngineSettings (serve/ sits below the settings:
    it names the fields it reads, the settings declare them and their defaults)."""
    model: str
    n_sink: int
    n_ring: int
    n_scratch: int
    n_threads: int | None
    kv_policy: str
    kv_block: int
    act_precision: str
    drafter: str
    drafter_fallback: str
    prefill_chunk: int
    read_during_jobs: bool
    read_during_jobs_max_lost: float
    read_during_jobs_share: float
    read_during_jobs_lag_s: float
    read_during_jobs_slack: float
    questions_see_stream: bool
    queue_size: int
    no_repeat_ngram: int
    kernel_calibration: str


class EngineThread:
    """submit_chat(messages, ...) / submit_explain(alert, ...) -> JobHandle; raises QueueFull,
    Refused, PromptTooLong, NotReady. start()/stop(); ready; prompts; tokenizer; stats(). Thread-safe
    API; the Engine itself is touched only by this thread. `feed` is the producer side of the token
    queue this thread drains (its tokenize must be prompts.log_tokens)."""

    def __init__(self, config: EngineConfig, feed: ContextFeed, *, prompts: Prompts,
                 query_tool: QueryTool | None = None, heartbeat: Callable[[], None] | None = None,
                 kernel_plan_dir: Path | None = None) -> None:
        """config: the engine's settings (gateway.settings.EngineSettings; the one home of their defaults)."""
        self.config = config
        self.model_path = resolve_model(config.model)
        self.prompts = prompts
        self.tokenizer = self.prompts.tokenizer
        self.sink_tokens = self.prompts.sink_tokens
        n_sink = config.n_sink
        if n_sink and n_sink < len(self.sink_tokens):
            raise ValueError(f"engine.n_sink={n_sink} is smaller than the system prompt ({len(self.sink_tokens)} tokens)")
        self.n_sink = n_sink or len(self.sink_tokens)
        self.n_ring, self.n_scratch, self.n_threads = config.n_ring, config.n_scratch, config.n_threads
        self.kv_policy, self.kv_block = config.kv_policy, config.kv_block   # KV eviction (native/kv_cache.h)
        self.act_precision = config.act_precision   # "auto" resolves in Engine (q8 on CPUs)
        self.prefill_chunk = config.prefill_chunk
        # Stream chunks read between a job's steps (serve/job_reading.py); set up once the engine says it can.
        self.reading: ReadingDuringJobs | None = None
        self._draft_pending: list[list[int]] = []   # stream tokens read during a job, for the drafter after it
        self._on_step: Callable[[], None] | None = None   # the running job's step hook (_reader)
        self._job_clock: JobClock | None = None           # ... and its reading account
        self._last_tick = time.monotonic()
        # "none" | "ngram" | "model[:backend]" (gateway.llm.drafters): what runs for the configured drafter
        # (auto, or model:rknn without an NPU, resolve here: a missing runtime with fallback "error" stops start-up)
        drafter = config.drafter
        self.draft_configured = drafter
        self.draft_spec, self.draft_why = resolve_draft_spec(drafter, config.drafter_fallback)
        (log.info if self.draft_why == "configured" or drafter == "auto" else log.warning)(
            "drafter %s: %s (%s)", drafter, self.draft_spec, self.draft_why)
        self.drafter: Any = None             # built on the engine thread, mirrors the stream
        self._spec_totals = {"proposed": 0, "accepted": 0, "target_forwards": 0, "decoded": 0}
        self.feed = feed
        self.query_tool = query_tool         # chat answers go through one store query when set
        self.no_repeat_ngram = config.no_repeat_ngram   # the repetition guard on answers (gateway.llm.repetition)
        self.heartbeat = heartbeat or (lambda: None)   # called every loop turn (the systemd watchdog)
        # The calibrated kernel plan (gateway.llm.kernel_plan): its folder (None: the static plan) and
        # whether a start without one calibrates first ("auto": not under pytest, "on", "off").
        self.kernel_plan_dir, self.kernel_calibration = kernel_plan_dir, config.kernel_calibration
        self.kernel_plan = "static"
        self.admission: Admission | None = None
        # Bounded by queue_size in submit (not by the queue itself: a preempted job must always go back).
        self._queue: queue.PriorityQueue[tuple[int, int, Job]] = queue.PriorityQueue()
        self.queue_size = config.queue_size
        self._seq = 0                    # FIFO tie-break within a priority
        self._vocab: Vocabulary | None = None   # grammars' byte vocabulary (_vocabulary)
        self._queued_ms = [0.0, 0.0]     # estimates of queued + running jobs, by priority
        self._waiting = [0, 0]           # jobs queued and not running, by priority
        self._running: tuple[Job, float] | None = None   # the job being served, since (monotonic)
        self.jobs_preempted = 0
        self._est_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self.engine: Any = None
        self.error: str | None = None
        self.jobs_done = 0
        self.jobs_cancelled = 0     # stopped because their client went away
        self.prefill_calls = 0
        self.last_prefill_ms = 0.0
        self._engine_stats: dict = {}

    def _plain(self, text: str) -> list[int]:
        """Untrusted text as the stream gets it (prompts.log_tokens)."""
        return self.prompts.log_tokens(text)

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="engine", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def wait_ready(self, timeout: float | None = None) -> bool:
        self._ready.wait(timeout)
        if self.error:
            raise RuntimeError(self.error)
        return self._ready.is_set()

    def notify(self) -> None:
        """The producer pushed to the token queue: wake the engine thread."""
        self._wake.set()

    # --- submitting ----------------------------------------------------------------------------
    def answer_budget(self, ttft_budget_ms: float) -> AnswerBudget:
        """What a chat answer may take: prompt tokens that prefill fits in PROMPT_BUDGET_SHARE of the
        first-token budget (at the measured speed), and whether it goes through a store query (a query
        tool, and room in the scratch for its call and result beside QUERY_MIN_ROOM)."""
        ms = getattr(self.admission, "prefill_ms_per_tok", None)
        query = self.query_tool is not None and self.n_scratch - QUERY_PROMPT_TOKENS >= QUERY_MIN_ROOM
        return AnswerBudget(int(PROMPT_BUDGET_SHARE * ttft_budget_ms / ms) if ms else None, query,
                            QUERY_PROMPT_TOKENS if query else 0, self.n_scratch)

    def prompt_tokens(self, messages: Sequence[Mapping[str, str]]) -> int:
        return len(self.prompts.chat_tokens(messages))

    def submit_chat(self, messages: Sequence[Mapping[str, str]], *, max_tokens: int, ttft_budget_ms: float,
                    temperature: float = 0.0, top_p: float = 1.0, seed: int | None = None,
                    loop: asyncio.AbstractEventLoop | None = None, query: bool = False,
                    on_event: Callable[[dict], None] | None = None, grammar: Any = None) -> JobHandle:
        """An operator's answer. query=True (with a query_tool): the model first writes one store query
        under the call grammar, the query runs, and the answer is written from its result and checked
        before any of it is sent: the call, the result's prefill and the answer count toward the
        first-token budget (jobs.decode_to_due). grammar: the answer is
        decoded under it (gateway.llm.constrained) and ends once it is a whole sentence of it."""
        if query and self.query_tool is not None:
            return self.submit("chat", self.prompts.chat_tokens(messages), max_tokens=max_tokens,
                               budget_ms=ttft_budget_ms, deadline_kind=TTFT, temperature=temperature, top_p=top_p,
                               seed=seed, loop=loop, on_event=on_event, turns=[dict(m) for m in messages])
        return self.submit("chat", self.prompts.chat_tokens(messages), max_tokens=max_tokens,
                           budget_ms=ttft_budget_ms, deadline_kind=TTFT, temperature=temperature, top_p=top_p,
                           seed=seed, loop=loop, on_event=on_event, grammar=grammar)

    def submit_explain(self, alert: Mapping[str, Any], *, max_tokens: int, budget_ms: float,
                       on_event: Callable[[dict], None] | None = None) -> JobHandle:
        return self.submit("explain", self.prompts.explain_tokens(alert), max_tokens=max_tokens, budget_ms=budget_ms,
                           deadline_kind=COMPLETE, on_event=on_event)

    def submit(self, kind: str, prompt: list[int], *, max_tokens: int, budget_ms: float, deadline_kind: str,
               temperature: float = 0.0, top_p: float = 1.0, seed: int | None = None,
               loop: asyncio.AbstractEventLoop | None = None,
               on_event: Callable[[dict], None] | None = None, turns: list | None = None,
               grammar: Any = None) -> JobHandle:
        if not self.ready or self.admission is None:
            raise NotReady(self.error or "the model is still loading")
        if max_tokens < 1:
            raise ValueError(f"max_tokens={max_tokens} must be >= 1")
        extra = QUERY_PROMPT_TOKENS if turns is not None else 0     # call instruction, call, result
        if len(prompt) + extra + max_tokens > self.n_scratch:
            raise PromptTooLong(f"prompt ({len(prompt)} tokens{f' + {extra} for the store query' if extra else ''})"
                                f" + max_tokens ({max_tokens}) exceeds engine.n_scratch={self.n_scratch}")
        decode_in_budget = decode_to_due(deadline_kind, max_tokens, turns is not None)
        with self._est_lock:
            prio = PRIORITY.get(kind, len(self._queued_ms) - 1)
            # A job waits for everything queued at its priority or higher, the one running at those
            # priorities, and a lower one running until it yields (or ends, if it may not be stopped).
            ahead_ms = sum(self._queued_ms[: prio + 1]) + self._running_below_ms(prio)
            wait_ms = ahead_ms + self.prefill_chunk * self.admission.prefill_ms_per_tok
            # priced at what a query typically adds, not the room reserved for the longest one
            priced = len(prompt) + (TYPICAL_QUERY_TOKENS if turns is not None else 0)
            d = self.admission.decide(priced, decode_in_budget, budget_ms, wait_ms, idle=sum(self._queued_ms) < 1.0,
                                      kind=kind)
            if not d.admitted:
                raise Refused(d.retry_after_s, d.estimate_ms, budget_ms)
            full = self.admission.estimate_ms(priced, max_tokens + (TYPICAL_CALL_TOKENS if turns is not None else 0))
            job = Job(kind, list(prompt), max_tokens, budget_ms, deadline_kind, JobHandle(loop, on_event),
                      estimate_ms=full, temperature=temperature, top_p=top_p, seed=seed, turns=turns,
                      model_ms=d.model_ms, seq=self._seq, grammar=grammar)
            if self._queue.qsize() >= self.queue_size:
                self.admission.admitted -= 1   # not admitted after all: the queue refused it
                self.admission.refused += 1
                raise QueueFull(max(1.0, ahead_ms / 1000.0))
            self._queue.put_nowait((prio, self._seq, job))
            self._seq += 1
            self._waiting[prio] += 1
            self._queued_ms[prio] += full
        self._wake.set()
        return job.handle

    def _preemptible(self, job: Job) -> bool:
        return job.kind == "explain" and job.preemptions < MAX_PREEMPTIONS

    def _running_below_ms(self, prio: int) -> float:
        """What a running job of lower priority than `prio` still costs a new job (under _est_lock)."""
        if self._running is None or PRIORITY.get(self._running[0].kind, len(self._queued_ms) - 1) <= prio:
            return 0.0
        job, since = self._running
        assert self.admission is not None
        if self._preemptible(job):   # it stops at its next token or prompt chunk, then rolls back
            return max(self.admission.decode_ms_per_tok, PREFILL_CHECK_TOKENS * self.admission.prefill_ms_per_tok)
        return max(0.0, job.estimate_ms - (time.monotonic() - since) * 1000)

    def _outranked(self, job: Job) -> bool:
        """A job of higher priority waits, and this one may be stopped for it."""
        prio = PRIORITY.get(job.kind, len(self._queued_ms) - 1)
        return self._preemptible(job) and any(self._waiting[:prio])

    # --- the engine thread ---------------------------------------------------------------------
    def _run(self) -> None:
        try:
            self._load()
        except Exception as exc:
            self.error = f"engine failed to start: {exc}"
            log.exception("engine failed to start")
            self._ready.set()
            return
        while not self._stop.is_set():
            self.heartbeat()
            try:
                prio, _, job = self._queue.get_nowait()
            except queue.Empty:
                job = None
            if job is not None:
                with self._est_lock:
                    self._waiting[prio] -= 1
                    self._running = (job, time.monotonic())
                try:
                    self._serve(job)
                finally:
                    with self._est_lock:
                        self._running = None
                    self._on_step, self._job_clock = None, None
                    self._flush_drafter()
                continue
            self._tick()
            if self._prefill_stream():
                continue
            self._wake.wait(IDLE_WAIT_S)
            self._wake.clear()
        if self.drafter is not None:
            self.drafter.close()

    def _tick(self) -> None:
        """Every TICK_S: the feed closes its due folds, the engine's figures are refreshed."""
        if time.monotonic() - self._last_tick >= TICK_S:
            self.feed.tick()
            self._engine_stats = dict(self.engine.stats())
            self._last_tick = time.monotonic()

    def _prefill_stream(self, during_job: bool = False) -> int:
        """One chunk of the token queue into the stream context; its tokens (0: the queue was empty).
        during_job: a job holds scratch (it keeps its view); the drafter gets the tokens after the job,
        so it mirrors what the job reads (_flush_drafter)."""
        toks, n = self.feed.queue.pop(self.prefill_chunk)
        if not n:
            return 0
        ids = toks.tolist()
        t0 = time.perf_counter()
        if self.engine.kv_policy == "novelty":   # lines the triage alerted on are kept longer
            self.engine.set_stream_importance(self.feed.queue.popped_importance)
        self.engine.prefill_stream(ids)
        ms = (time.perf_counter() - t0) * 1000   # the target's own cost (admission's EMA)
        if self.drafter is not None:
            if during_job:
                self._draft_pending.append(ids)
            else:
                self.drafter.push_stream(ids)
        self.admission.observe_prefill(len(ids), ms)
        self.prefill_calls += 1
        self.last_prefill_ms = ms
        return len(ids)

    def rest_known(self, prompt_tokens: int, decode_tokens: int) -> float | None:
        """The running job's own work left is a prompt of `prompt_tokens` new tokens and `decode_tokens`
        to its deadline point, at the measured rates: reading inside it is priced at that (ms, returned)
        from here. None: no job's clock to tell."""
        if self._job_clock is None or self.admission is None:
            return None
        rest = self.admission.estimate_ms(prompt_tokens, decode_tokens)
        self._job_clock.rest_known(time.monotonic(), rest)
        return rest

    def _flush_drafter(self) -> None:
        """The stream tokens read during the last job, to the drafter in their order."""
        if self.drafter is not None and self._draft_pending:
            self.drafter.push_stream([t for ids in self._draft_pending for t in ids])
        self._draft_pending.clear()

    def _reader(self, job: Job, clock: JobClock) -> Callable[[], None]:
        """The step hook of one job: between its steps, at most one stream chunk (serve/job_reading.py),
        never while a job that outranks it waits or after its client went away."""
        def step() -> None:
            self._tick()
            r = self.reading
            if r is None or not r.enabled or job.handle.cancelled or self._outranked(job):
                return
            assert self.admission is not None
            q = self.feed.queue
            oldest = q.oldest_pending_ts()
            lost = self.engine.job_view_lost
            if r.decide(clock, q.backlog_tokens(), time.time() - oldest if oldest is not None else 0.0,
                        self.admission.prefill_ms_per_tok, lost) != READ:
                return
            t0 = time.perf_counter()
            n = self._prefill_stream(during_job=True)
            if n:
                r.read(clock, n, (time.perf_counter() - t0) * 1000)
                r.view_lost_tokens += max(0, self.engine.job_view_lost - lost)
        return step

    def _clock(self, job: Job) -> JobClock:
        """Admission's estimate of the job's own work to its deadline point (as submit priced it), and the
        point reading inside the job aims at: the job's estimated end plus read_during_jobs_slack of the
        slack its budget leaves (never past the deadline itself)."""
        assert self.admission is not None
        priced = len(job.prompt) + (TYPICAL_QUERY_TOKENS if job.turns is not None else 0)
        decode = decode_to_due(job.deadline_kind, job.max_tokens, job.turns is not None)
        work = self.admission.estimate_ms(priced, decode) * self.admission.bias(job.kind)
        started = time.monotonic()
        slack_s = max(0.0, job.deadline - started - work / 1000)
        return JobClock(min(job.deadline, started + work / 1000 + self.config.read_during_jobs_slack * slack_s),
                        work, started, job.deadline)

    def _load(self) -> None:
        if self.kernel_plan_dir is not None:   # before the engine's first matmul
            self.kernel_plan = kernel_plan.prepare(self.model_path, self.n_threads or default_threads(),
                                                   self.kernel_plan_dir, self.kernel_calibration,
                                                   precision=resolve_act_precision(self.act_precision, select_backend()),
                                                   heartbeat=self.heartbeat)
        t0 = time.perf_counter()
        self.engine = Engine(str(self.model_path), n_sink=self.n_sink, n_ring=self.n_ring,
                             n_scratch=self.n_scratch, n_threads=self.n_threads, tokenizer=self.tokenizer,
                             kv_policy=self.kv_policy, kv_block=self.kv_block, act_precision=self.act_precision)
        t1 = time.perf_counter()
        self.engine.prefill_stream(self.sink_tokens)
        prefill_ms = (time.perf_counter() - t1) * 1000 / len(self.sink_tokens)
        if self.draft_spec != "none":
            self.drafter = make_drafter(self.draft_spec, self.engine, n_threads=self.n_threads,
                                        choice_dir=self.kernel_plan_dir)   # auto's timing cached beside the plan
            if hasattr(self.drafter, "choice"):   # auto: what the timing chose and why (stats, the log)
                self.draft_spec, self.draft_why = self.drafter.choice["spec"], self.drafter.choice["why"]
            self.drafter.push_stream(self.sink_tokens)
        if self.query_tool is not None:
            self.query_tool.constraint(Grounding())   # the vocabulary's trie, once, before the first question
        # Seed the EMAs with a measured generate: the host, model and thread count it runs with.
        probe = self.engine.generate(self.prompts.chat_tokens([{"role": "user", "content": "Status?"}]),
                                     SEED_GENERATE_TOKENS)
        decode_ms = probe.decode_ms / len(probe.tokens) if probe.tokens and probe.decode_ms > 0 else prefill_ms
        self.admission = Admission(max(prefill_ms, 1e-3), max(decode_ms, 1e-3))
        reads = self.config.read_during_jobs and self.engine.reads_during_jobs
        if self.config.read_during_jobs and not reads:
            log.warning("engine.read_during_jobs: the %s engine cannot read the stream during a job; "
                        "reading waits for each job's end", self.engine.backend)
        self.reading = ReadingDuringJobs(reads, int(self.config.read_during_jobs_max_lost * self.n_ring),
                                         self.prefill_chunk, self.config.read_during_jobs_share,
                                         self.config.read_during_jobs_lag_s)
        self._engine_stats = dict(self.engine.stats())
        log.info("engine ready in %.1f s: %s, sink %d tokens, prefill %.2f ms/tok, decode %.2f ms/tok",
                 time.perf_counter() - t0, self.model_path.name, len(self.sink_tokens), prefill_ms, decode_ms)
        self._ready.set()

    def _serve(self, job: Job) -> None:
        assert self.admission is not None
        started = time.monotonic()
        first_at: list[float] = []
        out: list[int] = []
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        stop_ids = self.tokenizer.stop_ids
        hold = job.held   # a query's answer is checked first (turns: only with a query tool)
        preempted: list[bool] = []
        clock = self._job_clock = self._clock(job)
        self._on_step = self._reader(job, clock)   # the job's step hook, read by _generate / query_job

        def keep_going() -> bool:
            if job.handle.cancelled:
                return False
            if self._outranked(job):
                preempted.append(True)
                return False
            return True

        def on_token(tid: int) -> bool:
            if not first_at:
                first_at.append(time.monotonic())
                clock.due_passed = job.due_at_first_token
            if tid in stop_ids:
                return False
            out.append(tid)
            text = decoder.decode(self.tokenizer.token_bytes(tid))
            if not hold:
                job.handle._emit({"type": "token", "id": tid, "text": text})
            return keep_going()

        try:
            res = (self._generate_query(job, on_token) if job.turns is not None
                   else self._generate(job, on_token, keep_going))
        except Exception as exc:
            log.exception("job failed")
            job.handle._emit({"type": "error", "message": f"engine error: {exc}"})
            self._job_finished(job)
            return
        if preempted and not job.handle.cancelled:   # rolled back already: it goes first among its equals
            job.preemptions += 1
            self.jobs_preempted += 1
            job.handle._emit({"type": "restart"})
            prio = PRIORITY.get(job.kind, len(self._queued_ms) - 1)
            with self._est_lock:
                self._queue.put_nowait((prio, job.seq, job))
                self._waiting[prio] += 1
            return
        finish = "length"
        if job.handle.cancelled:
            finish = "cancelled"
            self.jobs_cancelled += 1
        elif res.finish_reason == "stop":
            finish = "stop"      # a stop token, or the answer ended on purpose (answer.alike.Watch)
        end = time.monotonic()
        due = job.due_at(first_at[0] if first_at else None, end)
        late = due > job.deadline
        self.admission.finished(late)
        if not job.handle.cancelled and not job.preemptions:   # a stopped job's time includes the question's
            # reading put inside the job's slack is not the cost model's error
            self.admission.observe_outcome(job.kind, job.model_ms,
                                           (due - job.submitted) * 1000 - clock.read_before_due_ms)
        # A cut (max_tokens, cancel) inside a character leaves its first bytes pending: they are
        # dropped, never sent as U+FFFD.
        cut = len(decoder.getstate()[0])
        text = self.tokenizer.decode(out)
        if cut and text.endswith("\ufffd"):
            text = text[:-1]
        checked = res.extra.get("plan").check(text) if hold and "plan" in res.extra else None
        if checked is not None:
            text = res.extra.get("checked", checked.text)      # several asks: checked one by one
            if not job.handle.cancelled:
                job.handle._emit({"type": "token", "id": None, "text": text})
        result = {"kind": job.kind, "tokens": out, "text": text, "finish_reason": finish,
                  "prompt_tokens": len(job.prompt), "completion_tokens": len(out),
                  "queue_ms": (started - job.submitted) * 1000,
                  "ttft_ms": (first_at[0] - job.submitted) * 1000 if first_at else None,
                  "total_ms": (end - job.submitted) * 1000, "late": late,
                  "budget_ms": job.budget_ms, "estimate_ms": job.estimate_ms}
        if "query" in res.extra:
            result["query"] = res.extra["query"]
            result["prompt_tokens"] = res.prompt_tokens
            # the wait before its stages, beside them: what a late question waited for shows in its timing
            result["query"].setdefault("timing", {})["queue_ms"] = round(result["queue_ms"], 1)
            if checked is not None and "checked" not in res.extra:
                result["query"]["check"] = checked.summary()
            if "queries" in res.extra:
                result["queries"] = res.extra["queries"]
        self._job_finished(job)
        job.handle._emit({"type": "done", "result": result})

    def _generate(self, job: Job, on_token: Callable[[int], bool],
                  keep_going: Callable[[], bool] | None = None) -> GenerateResult:
        """The job through the one decode loop, with the drafter when there is one (greedy output is
        the target's own, token for token); its timings go to admission control."""
        mask = None
        if job.grammar is not None:          # a whole sentence of the grammar ends the answer
            mask = LogitsMask(Constraint(Grammar(job.grammar), self._vocabulary()), job.max_tokens)
            made: list[int] = []
            inner = on_token

            def on_token(tid: int) -> bool:
                made.append(tid)
                return inner(tid) and not mask.complete(made)
        res = speculative_generate(self.engine, self.drafter, job.prompt, job.max_tokens,
                                   SamplingParams(temperature=job.temperature, top_p=job.top_p), job.seed,
                                   stop_tokens=sorted(self.tokenizer.stop_ids), on_token=on_token,
                                   no_repeat_ngram=self.no_repeat_ngram if mask is None else 0,
                                   logits_processor=mask,
                                   keep_going=keep_going or (lambda: not job.handle.cancelled), on_step=self._on_step)
        if self.drafter is not None:
            self._count_speculation(res.stats)
        self.admission.observe_prefill(res.prefill_tokens, res.prefill_ms)
        self.admission.observe_decode(len(res.tokens), res.decode_ms)   # effective ms per emitted token
        return res

    def _generate_query(self, job: Job, on_token: Callable[[int], bool]) -> GenerateResult:
        """A question through store queries (serve/query_job.py)."""
        return generate_query(self, job, on_token, self._on_step)

    def _query_answer(self, job: Job, turns: list, on_token: Callable[[int], bool],
                      on_step: Callable[[], None] | None = None) -> GenerateResult:
        """Question -> call -> the query -> answer from its result (serve/query_job.py)."""
        return query_answer(self, job, turns, on_token, on_step)

    def _vocabulary(self) -> Vocabulary:
        """The tokenizer's byte vocabulary for grammars, built once (the query tool's when it has one)."""
        if self._vocab is None:
            tool = self.query_tool
            self._vocab = tool.vocabulary() if tool is not None else Vocabulary.of(self.tokenizer)
        return self._vocab

    def _count_speculation(self, st: SpecStats) -> None:
        t = self._spec_totals
        t["proposed"] += st.n_drafted
        t["accepted"] += st.n_accepted
        t["target_forwards"] += st.n_target_forwards
        t["decoded"] += st.n_decoded

    def _job_finished(self, job: Job) -> None:
        with self._est_lock:
            prio = PRIORITY.get(job.kind, len(self._queued_ms) - 1)
            self._queued_ms[prio] = max(0.0, self._queued_ms[prio] - job.estimate_ms)
        self.jobs_done += 1

    # --- figures -------------------------------------------------------------------------------
    def stats(self) -> dict:
        oldest = self.feed.queue.oldest_pending_ts()
        d: dict[str, Any] = {"ready": self.ready, "error": self.error, "model": self.model_path.name,
                             "queue_depth": self._queue.qsize(), "jobs_done": self.jobs_done,
                             "jobs_cancelled": self.jobs_cancelled, "jobs_preempted": self.jobs_preempted,
                             "prefill_calls": self.prefill_calls, "token_queue": self.feed.stats(),
                             "lag_s": max(0.0, time.time() - oldest) if oldest is not None else 0.0,
                             "lag_tokens": self.feed.queue.backlog_tokens()}
        if self.admission is not None:
            d["admission"] = self.admission.stats()
        d["engine"] = dict(self._engine_stats)   # refreshed by the engine thread: only it touches the Engine
        if self.reading is not None:             # stream chunks read between jobs' steps (serve/job_reading.py)
            d["engine"].update(self.reading.stats())
        d["drafter"] = {"configured": self.draft_configured, "running": self.draft_spec, "why": self.draft_why}
        if self.draft_spec != "none":
            t = dict(self._spec_totals)
            d["speculative"] = {"drafter": self.draft_spec, **t,
                                "acceptance_rate": t["accepted"] / t["proposed"] if t["proposed"] else None,
                                "tokens_per_target_forward": (t["decoded"] / t["target_forwards"]
                                                              if t["target_forwards"] else None)}
        return d


@dataclass(frozen=True)
class AnswerBudget:
    """EngineThread.answer_budget: what the chat route fits a prompt into."""
    max_prompt_tokens: int | None      # None: prefill not measured yet
    query: bool                        # answered through one store query (engine.query)
    reserved: int                      # tokens the query adds to the prompt (instruction, call, result)
    n_scratch: int                     # prompt + answer must fit this


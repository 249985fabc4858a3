"""Deadline admission control: EMAs of measured prefill and decode ms/token, a cost estimate per
job, refusal up front of a job that cannot meet its deadline, and honest counters.

Knows nothing about the engine or the jobs' content: the engine thread feeds it measurements and asks.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable

from gateway.llm.timing import EMA_ALPHA, MsPerToken

__all__ = ["Admission", "Decision", "EMA_ALPHA"]
MIN_RETRY_AFTER_S = 1.0
STALE_S = 5.0   # figures older than this, on an idle engine, no longer refuse a job (see decide)
BIAS_LIMITS = (0.25, 4.0)   # how far outcomes may scale the cost model (a runaway guard, not a tuning)
# A kind's correction fades back to none as its last outcome ages: a kind that is refused gets no new
# outcomes, so an old bad one must not refuse it for good (the probe's reason, for the correction).
BIAS_HALF_LIFE_S = 300.0
# A kind with no job admitted for this long gets one admitted on an idle queue (a probe): its estimate is
# corrected only by its own outcomes, and a refused kind has none (see decide).
KIND_PROBE_S = 60.0


@dataclass(frozen=True)
class Decision:
    admitted: bool
    estimate_ms: float          # queue wait + prefill + decode (the part that must fit the budget), corrected
    budget_ms: float
    retry_after_s: float        # when a refused job might fit (0 when admitted)
    model_ms: float = 0.0       # the same before the outcome correction (what outcomes are compared with)


class Admission:
    """estimate/admit/observe; thread-safe.

    A job's cost in ms: queue_wait_ms + prompt_tokens * prefill_ms_per_tok
                        + decode_tokens * decode_ms_per_tok,
    where decode_tokens is what must happen before the deadline (1 for a time-to-first-token
    deadline, max_tokens for an explanation that must be complete). Refused: cost > budget.
    Missed: admitted, yet finished after its deadline (counted, never hidden).

    The figures only change when work runs, so a burst of slowness (another process on the cores)
    would otherwise refuse every later job for good: nothing runs to measure the recovery. An idle
    engine whose last measurement is STALE_S old admits the job that would be refused (a probe,
    counted): it runs at once, and its own first timings replace the stale figures.

    The cost model is only a model: it prices a query by a typical size, and its figures follow the
    stream's small prefill calls under whatever else shares the cores. Each finished job reports how
    long it really took to its deadline point against what the model said (observe_outcome); the
    running ratio, per kind of job (starting at 1, fading back to 1 as it ages), scales later
    estimates. A model that overestimates stops refusing jobs that would have made it; one that
    underestimates (missed deadlines) refuses sooner. A kind whose uncorrected estimate sits over its
    budget gets no outcome, and a stream read without pause keeps the figures fresh (no stale-figures
    probe): so a kind with no job admitted for KIND_PROBE_S gets one admitted on an idle queue (a probe,
    counted; a late one counted as missed too), and its outcome corrects the kind's estimate either way
    (docs/perf/2026-12-06-rarity-and-late-reading.md, section 5).
    """

    def __init__(self, prefill_ms_per_tok: float, decode_ms_per_tok: float, alpha: float = EMA_ALPHA,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if prefill_ms_per_tok <= 0 or decode_ms_per_tok <= 0:
            raise ValueError("admission needs positive seed figures for prefill/decode ms per token")
        self.alpha = alpha
        self._prefill = MsPerToken(prefill_ms_per_tok, alpha)
        self._decode = MsPerToken(decode_ms_per_tok, alpha)
        self._lock = threading.Lock()
        self.admitted = 0
        self.refused = 0
        self.missed = 0
        self.on_time = 0
        self.probes = 0
        self._reseed = {"prefill": False, "decode": False}   # a probe's timings replace the stale EMAs
        self._clock = clock
        self._observed = clock()
        self._bias: dict[str, tuple[MsPerToken, float]] = {}   # kind -> (EMA of actual / modelled ms, when)
        self._admitted_at: dict[str, float] = {}    # kind -> when a job of it was last admitted
        self._started = clock()

    @property
    def prefill_ms_per_tok(self) -> float:
        return self._prefill.value   # type: ignore[return-value]  (seeded: never None)

    @property
    def decode_ms_per_tok(self) -> float:
        return self._decode.value    # type: ignore[return-value]

    def estimate_ms(self, prompt_tokens: int, decode_tokens: int, queue_wait_ms: float = 0.0) -> float:
        with self._lock:
            return (queue_wait_ms + prompt_tokens * self.prefill_ms_per_tok
                    + decode_tokens * self.decode_ms_per_tok)

    def bias(self, kind: str) -> float:
        with self._lock:
            return self._bias_now(kind)

    def _bias_now(self, kind: str) -> float:
        if kind not in self._bias:
            return 1.0
        ema, when = self._bias[kind]
        fade = 0.5 ** ((self._clock() - when) / BIAS_HALF_LIFE_S)
        return 1.0 + (ema.value - 1.0) * fade   # type: ignore[operator]  (seeded: never None)

    def decide(self, prompt_tokens: int, decode_tokens: int, budget_ms: float,
               queue_wait_ms: float = 0.0, idle: bool = False, kind: str = "") -> Decision:
        """idle: nothing runs or waits on the engine (then stale figures admit a probe). kind: whose
        outcomes correct the estimate (observe_outcome)."""
        model = self.estimate_ms(prompt_tokens, decode_tokens, queue_wait_ms)
        est = model * self.bias(kind)
        with self._lock:
            now = self._clock()
            stale = now - self._observed >= STALE_S
            untried = now - self._admitted_at.get(kind, self._started) >= KIND_PROBE_S
            if est <= budget_ms or idle and (stale or untried):
                self.admitted += 1
                self._admitted_at[kind] = now
                if est > budget_ms:
                    self.probes += 1
                    if stale:
                        self._reseed = {"prefill": True, "decode": True}
                return Decision(True, est, budget_ms, 0.0, model)
            self.refused += 1
        # The queue drains at about the rate it was estimated; after that much time the job would fit.
        retry = max(MIN_RETRY_AFTER_S, (est - budget_ms) / 1000.0)
        return Decision(False, est, budget_ms, retry, model)

    def observe_outcome(self, kind: str, model_ms: float, actual_ms: float) -> None:
        """A finished job: the model's uncorrected estimate (Decision.model_ms) and the real time from
        submission to its deadline point (first token, or the end)."""
        if model_ms <= 0 or actual_ms <= 0:
            return
        lo, hi = BIAS_LIMITS
        with self._lock:
            ema = MsPerToken(self._bias_now(kind), self.alpha)   # what is left of the last, faded
            ema.observe(1, min(hi, max(lo, actual_ms / model_ms)))
            self._bias[kind] = (ema, self._clock())

    def observe_prefill(self, n_tokens: int, ms: float) -> None:
        with self._lock:
            self._observe(self._prefill, "prefill", n_tokens, ms)

    def observe_decode(self, n_tokens: int, ms: float) -> None:
        with self._lock:
            self._observe(self._decode, "decode", n_tokens, ms)

    def _observe(self, ema: MsPerToken, kind: str, n_tokens: int, ms: float) -> None:
        if n_tokens <= 0 or ms <= 0:
            return
        if self._reseed[kind]:
            ema.value = None            # MsPerToken takes the first measurement as it is
            self._reseed[kind] = False
        ema.observe(n_tokens, ms)
        self._observed = self._clock()

    def finished(self, late: bool) -> None:
        with self._lock:
            if late:
                self.missed += 1
            else:
                self.on_time += 1

    def stats(self) -> dict:
        with self._lock:
            return {"admitted": self.admitted, "refused": self.refused, "missed": self.missed,
                    "on_time": self.on_time, "probes": self.probes, "prefill_ms_per_tok": self.prefill_ms_per_tok,
                    "decode_ms_per_tok": self.decode_ms_per_tok,
                    "bias": {k: round(self._bias_now(k), 3) for k in self._bias}}

"""Speculative decoding: the exact verification rule and the loop that drives the target through it.

Owns the rule, the adaptive draft length, the metrics and THE decode loop (no drafter: plain decoding;
Engine.generate calls it). Knows nothing
about how drafts are made (gateway.llm.drafters) nor how the engine computes logits.

The rule is speculative sampling as in Leviathan, Kalman & Matias, "Fast Inference from
Transformers via Speculative Decoding" (ICML 2023) and Chen et al., "Accelerating Large
Language Model Decoding with Speculative Sampling" (2023). Terms, for one block of K drafts:

- accepted token:  a draft x_i the target keeps; it is kept with probability min(1, p(x_i)/q(x_i)),
                   scanning left to right, and the block stops at the first draft not kept.
- recovered token: the token emitted in place of the first rejected draft, sampled from
                   normalize(max(0, p - q)) at that position (the residual the draft over-proposed).
- bonus token:     when all K drafts are accepted, one more token sampled from the target's
                   distribution after the last draft: the verify forward computed it for free.

p is the target's sampling distribution (temperature/top-k/top-p applied), q the distribution the
draft token was actually sampled from (a point mass for deterministic drafters such as n-gram).
The emitted sequence is then distributed exactly as target-only sampling. In greedy mode the rule
degenerates to "accept while the draft equals argmax p; emit argmax p at the first mismatch", so
the output is token-for-token the target's own greedy output (given batch-invariant logits).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

import numpy as np

from gateway.llm.repetition import NoRepeatNgram, chain
from gateway.llm.sampling import SamplingParams, probs_from_logits, sample

# --- limits and tuning -----------------------------------------------------------------------

K_MIN = 1                     # draft length never adapts below this
K_MAX = 12                    # ... nor above this (verify cost grows with K)
K_INITIAL = 4
PREFILL_CHECK_TOKENS = 64     # a job's prompt is prefilled in chunks of this when it may be cancelled
ACCEPT_EMA_ALPHA = 0.2        # same smoothing as the engine's cost EMAs
MIN_USEFUL_ACCEPT_PROB = 0.2  # no costs measured yet: draft the i-th token while alpha**i (its chance to be used) is above this
PRIOR_MARGINAL_COST = 0.3     # a block size not yet measured: each token past the first costs this fraction of a
                              # one-token forward (optimistic, so the size gets tried, and then its time is known)


# --- the verification rule -------------------------------------------------------------------

@dataclass(frozen=True)
class Verdict:
    n_accepted: int   # accepted drafts: a prefix of the block
    token: int        # the token after them: recovered (a draft was rejected) or bonus (none was)
    bonus: bool


def verify_greedy(draft: Sequence[int], target_logits: np.ndarray) -> Verdict:
    """draft [K]; target_logits [K+1, V]: row i scores the token after draft[:i]."""
    choice = np.argmax(target_logits, axis=-1)   # [K+1]; first maximum, as the engine's greedy
    for i, x in enumerate(draft):
        if int(choice[i]) != int(x):
            return Verdict(i, int(choice[i]), bonus=False)
    return Verdict(len(draft), int(choice[len(draft)]), bonus=True)


def verify_sampled(draft: Sequence[int], draft_probs: np.ndarray | None, target_probs: np.ndarray,
                   rng: np.random.Generator) -> Verdict:
    """The rule of Leviathan et al. / Chen et al. 2023.

    draft [K]; draft_probs q [K, V] or None for a deterministic proposal (q = point mass on the
    draft); target_probs p [K+1, V]: row i is the target's distribution after draft[:i].
    """
    for i, x in enumerate(draft):
        p_x = target_probs[i, x]
        q_x = 1.0 if draft_probs is None else draft_probs[i, x]
        assert q_x > 0.0, "a draft token must have been possible under the draft's own q"
        if rng.random() < min(1.0, p_x / q_x):
            continue
        if draft_probs is None:
            residual = target_probs[i].copy()     # max(0, p - onehot(x)) = p with x removed
            residual[x] = 0.0
        else:
            residual = np.maximum(target_probs[i] - draft_probs[i], 0.0)
        if residual.sum() <= 0.0:                 # p == q up to rounding: rejection had ~0 chance
            residual = target_probs[i]
        return Verdict(i, sample(residual, rng), bonus=False)
    return Verdict(len(draft), sample(target_probs[len(draft)], rng), bonus=True)


# --- metrics ---------------------------------------------------------------------------------

@dataclass
class StepCosts:
    """Measured wall time (ms) of one verification step (target forward of T tokens + the rule + rollback),
    an EMA per block size T. Verification is compute-bound on a CPU, so its cost curve is steep and
    uneven (kernel tiles); the draft length is chosen against the measured curve."""
    ms: dict[int, float] = field(default_factory=dict)

    def observe(self, T: int, ms: float) -> None:
        prev = self.ms.get(T)
        self.ms[T] = ms if prev is None else prev + ACCEPT_EMA_ALPHA * (ms - prev)

    def estimate(self, T: int) -> float | None:
        """The measured time of T, else the largest smaller measured size plus PRIOR_MARGINAL_COST of a
        one-token step per extra token; None before anything is measured."""
        if T in self.ms:
            return self.ms[T]
        if not self.ms:
            return None
        one = self.ms.get(1) or min(c / (1 + PRIOR_MARGINAL_COST * (t - 1)) for t, c in self.ms.items())
        lower = [t for t in self.ms if t < T]
        if not lower:
            return one * (1 + PRIOR_MARGINAL_COST * (T - 1))
        t0 = max(lower)
        return self.ms[t0] + PRIOR_MARGINAL_COST * one * (T - t0)

@dataclass
class SpecStats:
    n_drafted: int = 0        # draft tokens sent to verification
    n_accepted: int = 0
    n_recovered: int = 0
    n_bonus: int = 0
    n_target_forwards: int = 0    # verify/decode forwards after the prompt prefill
    n_decoded: int = 0            # tokens those forwards produced
    draft_ms: float = 0.0         # time the decode loop waited for drafts
    step_hook_ms: float = 0.0     # time spent in on_step between the job's steps (not in prefill/decode ms)
    verify_ms: float = 0.0        # target forwards + the rule
    prefill_ms: float = 0.0
    accept_ema: float = 0.5
    k: int = K_INITIAL
    block_sizes: list[int] = field(default_factory=list)
    costs: StepCosts = field(default_factory=StepCosts)

    @property
    def acceptance(self) -> float:
        return self.n_accepted / self.n_drafted if self.n_drafted else 0.0

    @property
    def tokens_per_target_forward(self) -> float:
        return self.n_decoded / self.n_target_forwards if self.n_target_forwards else 0.0

    def as_dict(self) -> dict:
        return {
            "acceptance": round(self.acceptance, 4),
            "tokens_per_target_forward": round(self.tokens_per_target_forward, 4),
            "n_drafted": self.n_drafted, "n_accepted": self.n_accepted,
            "n_recovered": self.n_recovered, "n_bonus": self.n_bonus,
            "n_target_forwards": self.n_target_forwards, "n_decoded": self.n_decoded,
            "draft_ms": round(self.draft_ms, 2), "verify_ms": round(self.verify_ms, 2),
            "prefill_ms": round(self.prefill_ms, 2), "step_hook_ms": round(self.step_hook_ms, 2),
            "accept_ema": round(self.accept_ema, 4),
            "k_final": self.k, "step_ms": {t: round(c, 2) for t, c in sorted(self.costs.ms.items())},
        }


def adapt_k(stats: SpecStats, n_drafted: int, n_accepted: int, k_max: int = K_MAX) -> None:
    """Update the acceptance EMA with one block and choose the next draft length.

    With per-token acceptance alpha, k drafts yield (1 - alpha**(k+1)) / (1 - alpha) tokens per step
    (the accepted prefix and the target's own next token) and cost one verification step of k + 1
    tokens (stats.costs) plus k drafted tokens (the measured wait per drafted token); k maximizes the
    tokens per ms. Before any step is measured: draft while alpha**i stays above MIN_USEFUL_ACCEPT_PROB.
    """
    if n_drafted == 0:
        return
    rate = n_accepted / n_drafted
    stats.accept_ema += ACCEPT_EMA_ALPHA * (rate - stats.accept_ema)
    alpha = min(max(stats.accept_ema, 1e-3), 1.0 - 1e-3)
    k = choose_k(alpha, stats.costs, stats.draft_ms / stats.n_drafted if stats.n_drafted else 0.0, k_max)
    if k is None:
        k = math.floor(math.log(MIN_USEFUL_ACCEPT_PROB) / math.log(alpha))
    stats.k = int(min(max(k, K_MIN), k_max))


def choose_k(alpha: float, costs: StepCosts, draft_ms_per_token: float, k_max: int = K_MAX) -> int | None:
    """The draft length in [K_MIN, k_max] with the most expected tokens per ms; None without costs."""
    best_k, best_rate = None, -1.0
    for k in range(K_MIN, k_max + 1):
        step = costs.estimate(k + 1)
        if step is None:
            return None
        rate = (1 - alpha ** (k + 1)) / (1 - alpha) / (step + k * draft_ms_per_token)
        if rate > best_rate:
            best_k, best_rate = k, rate
    return best_k


# --- the decode loop -------------------------------------------------------------------------

class LogitsProcessor(Protocol):
    """Applied to each target row before the rule (e.g. gateway.llm.constrained.LogitsMask): `generated`
    are the job's tokens before that row (prompt excluded); returns the row to decide on (masked tokens at
    -inf; greedy: any row with the same argmax as the masked one)."""
    def __call__(self, generated: Sequence[int], logits: np.ndarray, greedy: bool) -> np.ndarray: ...


class Target(Protocol):
    """What the loop needs of gateway.llm.engine.Engine (scratch-only; the stream is never touched).
    A target may also have `n_scratch` (its scratch capacity); one without it is unbounded."""
    scratch_len: int
    def forward_scratch(self, tokens: Sequence[int], all_logits: bool = False) -> np.ndarray: ...
    def rollback(self, n: int = 0) -> None: ...


@dataclass
class GenerateResult:
    tokens: list[int]
    text: str
    prefill_ms: float               # the prompt's forward (all but its last token, which the first step carries)
    decode_ms: float                # from the end of that forward to the last token
    prompt_tokens: int
    finish_reason: str              # "stop" (stop token or callback), "length", or "scratch_full"
    decode_steps: int = 0           # target forwards after the prompt's (each emits accepted drafts + 1)
    prefill_tokens: int = 0         # tokens in the prompt's forward
    stats: SpecStats = field(default_factory=SpecStats)
    extra: dict = field(default_factory=dict)

    @property
    def prefill_tok_s(self) -> float:
        return self.prefill_tokens / (self.prefill_ms / 1e3) if self.prefill_ms > 0 else 0.0

    @property
    def decode_tok_s(self) -> float:
        return len(self.tokens) / (self.decode_ms / 1e3) if self.decode_ms > 0 else 0.0

    @property
    def acceptance(self) -> float:
        return self.stats.acceptance

    @property
    def tokens_per_target_forward(self) -> float:
        return self.stats.tokens_per_target_forward

    @property
    def timings(self) -> dict:
        return {"prefill_ms": round(self.prefill_ms, 2), "decode_ms": round(self.decode_ms, 2),
                "decode_tok_s": round(self.decode_tok_s, 3),
                "draft_ms": round(self.stats.draft_ms, 2), "verify_ms": round(self.stats.verify_ms, 2)}


@dataclass
class _Decode:
    """One job's state in the loop: the prompt, the emitted tokens, where the scratch started."""
    target: Target
    drafter: object | None
    prompt: list[int]
    max_tokens: int
    sampling: SamplingParams
    rng: np.random.Generator
    stops: set[int]
    on_token: Callable[[int], bool | None] | None
    k_max: int
    base: int                       # scratch length where the prompt starts
    stats: SpecStats
    mask: LogitsProcessor | None = None
    out: list[int] = field(default_factory=list)
    finish: str = "length"

    def emit(self, tok: int) -> bool:
        """Append one token; False when generation must stop after it."""
        self.out.append(tok)
        keep_going = self.on_token(tok) if self.on_token else None
        if tok in self.stops or keep_going is False:
            self.finish = "stop"
            return False
        return len(self.out) < self.max_tokens

    def step(self) -> bool:
        """One target forward over [pending] + drafts, then the rule; False when generation is over."""
        cap = getattr(self.target, "n_scratch", None)
        room = None if cap is None else cap - self.target.scratch_len   # slots for pending + drafts
        if room is not None and room < 1:
            self.finish = "scratch_full"
            return False
        k = min(self.stats.k, self.max_tokens - len(self.out) - 1)
        if room is not None:
            k = min(k, room - 1)
        draft, q = self._draft(k)
        verdict = self._verify(draft, q)
        new = list(draft[:verdict.n_accepted]) + [verdict.token]
        n_before = len(self.out)
        go_on = all(self.emit(tok) for tok in new)      # stops at the first token that ends the job
        self.stats.n_decoded += len(self.out) - n_before
        if self.drafter is not None:
            self.drafter.observe(verdict.n_accepted, len(draft))
        return go_on

    def _draft(self, k: int) -> tuple[list[int], np.ndarray | None]:
        if self.drafter is None or k <= 0:
            return [], None
        td = time.perf_counter()
        draft, q = self.drafter.propose(self.prompt + self.out, k)
        self.stats.draft_ms += (time.perf_counter() - td) * 1e3
        return list(draft), q

    def _verify(self, draft: list[int], q: np.ndarray | None) -> Verdict:
        st = self.stats
        tv = time.perf_counter()
        pending = self.out[-1] if self.out else self.prompt[-1]
        rows = np.asarray(self.target.forward_scratch([pending] + draft, all_logits=True))
        rows = rows.reshape(len(draft) + 1, -1)          # [1+K, V]
        if self.mask is not None:                        # the same mask on every row: the rule stays exact
            rows = np.stack([self.mask(self.out + draft[:i], rows[i], self.sampling.greedy)
                             for i in range(len(draft) + 1)])
        if self.sampling.greedy:
            verdict = verify_greedy(draft, rows)
        else:
            p = probs_from_logits(rows, self.sampling)
            verdict = verify_sampled(draft, None if q is None else _fit_vocab(q, p.shape[-1]), p, self.rng)
        # keep pending + accepted drafts; drop the K/V of everything past the first rejection
        self.target.rollback(self.base + len(self.prompt) + len(self.out) + verdict.n_accepted)
        step_ms = (time.perf_counter() - tv) * 1e3
        st.verify_ms += step_ms
        st.costs.observe(len(draft) + 1, step_ms)
        st.n_target_forwards += 1
        st.n_drafted += len(draft)
        st.n_accepted += verdict.n_accepted
        st.n_bonus += int(verdict.bonus and len(draft) > 0)
        st.n_recovered += int(not verdict.bonus)
        st.block_sizes.append(len(draft))
        adapt_k(st, len(draft), verdict.n_accepted, self.k_max)
        return verdict


def _scratch_base(target: Target, prompt_len: int, max_tokens: int, n_prompt_cached: int) -> int:
    """Checks the job against the target's scratch; -> the scratch length where the prompt starts."""
    if prompt_len < 1:
        raise ValueError("speculative_generate: the prompt must hold at least one token")
    if max_tokens < 1:
        raise ValueError(f"speculative_generate: max_tokens must be >= 1, got {max_tokens}")
    entry_len = target.scratch_len
    if not 0 <= n_prompt_cached < prompt_len or n_prompt_cached > entry_len:
        raise ValueError(f"speculative_generate: n_prompt_cached={n_prompt_cached} must be below the prompt "
                         f"length {prompt_len} and within scratch_len={entry_len}")
    base = entry_len - n_prompt_cached
    cap = getattr(target, "n_scratch", None)
    if cap is not None and base + prompt_len > cap:
        raise ValueError(f"prompt of {prompt_len} tokens does not fit the {cap - base} free scratch slots "
                         f"(n_scratch = {cap})")
    return base


def speculative_generate(target: Target, drafter, prompt_tokens: Sequence[int], max_tokens: int,
                         sampling: SamplingParams = SamplingParams(), seed: int | None = None,
                         stop_tokens: Sequence[int] = (), on_token: Callable[[int], bool | None] | None = None,
                         k_max: int = K_MAX, detokenize: Callable[[list[int]], str] | None = None,
                         n_prompt_cached: int = 0, logits_processor: LogitsProcessor | None = None,
                         no_repeat_ngram: int = 0, keep_going: Callable[[], bool] | None = None,
                         on_step: Callable[[], None] | None = None) -> GenerateResult:
    """THE decode loop: generate in the target's scratch, with drafts from `drafter`, or without
    (drafter None: plain decoding, one token per target forward).

    The job forks from the stream context and rolls back at the end, so the sink and ring are
    untouched. The prompt but its last token is forwarded first; then each iteration runs ONE target
    forward over [pending] + drafts (pending = the last token, not yet in the cache), so every emitted
    token comes out of the rule and tokens per target forward = accepted + 1. Greedy output is the
    target's own (batch-invariant logits). on_token(id) may return False to stop.
    n_prompt_cached: how many leading prompt tokens the caller already put in the scratch (they stay).
    logits_processor: applied to every target row before the rule (constrained decoding); drafts it
    rules out are rejected like any draft the target would not emit.
    no_repeat_ngram: n >= 2 bans the token that would repeat an n-gram of the generated tokens more often
    than the prompt holds it (gateway.llm.repetition), before logits_processor, on every row alike; 0: off.
    keep_going: asked between prompt chunks of PREFILL_CHECK_TOKENS; False ends the job before its
    first token (a cancelled job does not finish a long prefill first).
    on_step: called between the job's steps (after each prompt chunk of PREFILL_CHECK_TOKENS and after
    each verify step), where the caller may read the stream (gateway/serve/engine_thread.py); its time
    is left out of prefill_ms and decode_ms (stats.step_hook_ms).
    """
    entry_len = target.scratch_len
    base = _scratch_base(target, len(prompt_tokens), max_tokens, n_prompt_cached)
    prompt = [int(t) for t in prompt_tokens]
    job = _Decode(target, drafter, prompt, max_tokens, sampling, np.random.default_rng(seed),
                  set(int(t) for t in stop_tokens), on_token, k_max, base, SpecStats(k=min(K_INITIAL, k_max)),
                  chain(NoRepeatNgram(no_repeat_ngram, prompt) if no_repeat_ngram else None, logits_processor))
    if drafter is not None:
        drafter.begin_job(prompt, sampling, seed)
    n_prefill = len(prompt) - 1 - n_prompt_cached
    hook = _timed(on_step, job.stats)
    t0 = time.perf_counter()
    try:
        todo = prompt[n_prompt_cached:-1]
        step = PREFILL_CHECK_TOKENS if keep_going is not None or on_step is not None else max(len(todo), 1)
        stopped = False
        for i in range(0, len(todo), step):
            if i:
                hook()
            if keep_going is not None and not keep_going():
                n_prefill, job.finish, stopped = i, "stop", True
                break
            target.forward_scratch(todo[i:i + step])
        t_prefill = time.perf_counter()
        job.stats.prefill_ms = (t_prefill - t0) * 1e3 - job.stats.step_hook_ms
        hooked = job.stats.step_hook_ms
        while not stopped and job.step():
            hook()
        decode_ms = (time.perf_counter() - t_prefill) * 1e3 - (job.stats.step_hook_ms - hooked)
    finally:
        target.rollback(entry_len)
        if drafter is not None:
            drafter.end_job()
    return GenerateResult(job.out, detokenize(job.out) if detokenize else "", job.stats.prefill_ms, decode_ms,
                          len(prompt), job.finish, decode_steps=job.stats.n_target_forwards,
                          prefill_tokens=max(n_prefill, 0), stats=job.stats)


def _timed(on_step: Callable[[], None] | None, stats: SpecStats) -> Callable[[], None]:
    """on_step, its time added to stats.step_hook_ms (a no-op without one)."""
    if on_step is None:
        return lambda: None

    def hook() -> None:
        t = time.perf_counter()
        try:
            on_step()
        finally:
            stats.step_hook_ms += (time.perf_counter() - t) * 1e3
    return hook


def _fit_vocab(q: np.ndarray, n_vocab: int) -> np.ndarray:
    """Draft and target share a tokenizer but their logit rows may be padded differently."""
    q = np.asarray(q, dtype=np.float64)
    if q.shape[-1] == n_vocab:
        return q
    if q.shape[-1] > n_vocab:
        return q[..., :n_vocab]
    return np.pad(q, [(0, 0)] * (q.ndim - 1) + [(0, n_vocab - q.shape[-1])])

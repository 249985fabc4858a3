"""The drafters' race: each candidate decodes the same greedy answer in the target's scratch, timed.

The prompt is forwarded once into the scratch and kept there (n_prompt_cached), so every run times the
decode alone: the target's steps, the drafts, and a draft model's reading of the prompt (as a job
pays it). Runs are interleaved over rounds and each candidate's best kept: a loaded host only slows a
run. A candidate that cannot be built, fails, or gives other tokens than target-only is dropped with
its reason. The clock is the caller's (tests pass a fake one). Knows nothing about caching or choosing.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from gateway.llm.drafters.base import Drafter
from gateway.llm.sampling import SamplingParams
from gateway.llm.speculative import speculative_generate

log = logging.getLogger(__name__)


@dataclass
class Race:
    tok_s: dict[str, list[float]] = field(default_factory=dict)   # each run's tokens/s, by spec
    skipped: dict[str, str] = field(default_factory=dict)         # spec -> why it left the race
    drafters: dict[str, Drafter | None] = field(default_factory=dict)   # the candidates still built
    screened: list[str] = field(default_factory=list)             # timed once only: far behind the fastest
    n_tokens: int = 0                                             # tokens of the reference answer
    seconds: float = 0.0

    @property
    def best(self) -> dict[str, float]:
        return {s: max(v) for s, v in self.tok_s.items() if v and s not in self.skipped}

    def close_all_but(self, keep: str | None) -> None:
        for spec, d in self.drafters.items():
            if spec != keep and d is not None:
                _close(d)


def _close(d: Drafter) -> None:
    try:
        d.close()
    except Exception as exc:   # a broken candidate must not stop the start
        log.warning("drafter %s: close failed: %s", getattr(d, "name", d), exc)


def first_difference(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


def race(engine, build: Callable[[str], Drafter | None], specs: Sequence[str], prompt: Sequence[int],
         stops: Sequence[int] = (), *, n_new: int, rounds: int, budget_s: float, warmup: int = 0,
         screen: float = 0.0, clock: Callable[[], float] = time.perf_counter) -> Race:
    """Time `specs` ("none" first: target-only, the reference) on `engine`; build(spec) makes a drafter.
    warmup: tokens decoded untimed first. Rounds after the first start only within budget_s, and without
    the candidates whose first run was below `screen` x the fastest's.
    Raises when target-only itself cannot run (nothing can be timed then)."""
    if not specs or specs[0] != "none":
        raise ValueError(f"the race needs target-only ('none') first, got {list(specs)}")
    if len(prompt) < 2:
        raise ValueError("the timed prompt needs at least two tokens")
    out = Race()
    t_start = clock()
    out.drafters["none"] = None
    for spec in specs[1:]:
        try:
            out.drafters[spec] = build(spec)
        except Exception as exc:
            out.skipped[spec] = f"cannot start: {type(exc).__name__}: {exc}"
    entry = engine.scratch_len
    ref: list[int] | None = None
    try:
        engine.forward_scratch(list(prompt[:-1]))   # once; every run decodes after it
        if warmup:   # untimed: the first decode steps after a load run cold
            speculative_generate(engine, None, list(prompt), warmup, SamplingParams(), n_prompt_cached=len(prompt) - 1)
        for r in range(rounds):
            if r and clock() - t_start > budget_s:
                break
            if r == 1 and screen:   # far behind after one run each: no second chance (saves the slow ones' time)
                best = out.best
                out.screened = [s for s, v in best.items() if v < screen * max(best.values())]
            order = list(out.drafters) if r % 2 == 0 else list(out.drafters)[::-1]   # drift hits all alike
            for spec in order:
                if spec in out.skipped or spec in out.screened:
                    continue
                got = _run(engine, out.drafters[spec], prompt, stops, n_new, clock, out, spec)
                if got is None and spec == "none":
                    raise RuntimeError(f"target-only could not be timed: {out.skipped['none']}")
                if got is None:
                    continue
                tokens, tok_s = got
                if ref is None:
                    ref, out.n_tokens = tokens, len(tokens)
                elif tokens != ref:
                    i = first_difference(tokens, ref)
                    out.skipped[spec] = (f"greedy output differs from target-only at token {i} "
                                         f"({tokens[i] if i < len(tokens) else 'end'} vs {ref[i] if i < len(ref) else 'end'})")
                    continue
                out.tok_s.setdefault(spec, []).append(tok_s)
    except BaseException:
        out.close_all_but(None)
        raise
    finally:
        engine.rollback(entry)
        out.seconds = clock() - t_start
    for spec in out.skipped:
        d = out.drafters.get(spec)
        if d is not None:
            _close(d)
            out.drafters[spec] = None
    return out


def _run(engine, drafter, prompt, stops, n_new, clock, out: Race, spec: str) -> tuple[list[int], float] | None:
    """One timed greedy answer: (tokens, tokens/s), or None when it failed (recorded in out.skipped)."""
    try:
        t0 = clock()
        res = speculative_generate(engine, drafter, list(prompt), n_new, SamplingParams(), stop_tokens=stops,
                                   n_prompt_cached=len(prompt) - 1)
        dt = clock() - t0
    except Exception as exc:
        out.skipped[spec] = f"failed: {type(exc).__name__}: {exc}"
        return None
    if not res.tokens or dt <= 0:
        out.skipped[spec] = "decoded nothing"
        return None
    return list(res.tokens), len(res.tokens) / dt

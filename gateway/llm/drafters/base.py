"""The one interface every drafter implements (n-gram lookup, draft model on any backend).

Knows nothing about verification (gateway.llm.speculative) nor about threads (drafters.deferred).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Sequence

import numpy as np

Proposal = tuple[list[int], "np.ndarray | None"]   # (tokens [k'], q [k', V] or None = point masses)


class Drafter(ABC):
    """Proposes tokens that the target is likely to produce next.

    Life cycle: push_stream() mirrors the engine's committed stream (sink + ring) as it grows;
    a job is begin_job() -> (propose() -> observe())* -> end_job(); close() frees resources.
    """

    name = "drafter"

    def push_stream(self, tokens: Sequence[int]) -> None:
        """The engine appended `tokens` to its stream context (same order as prefill_stream)."""

    def begin_job(self, prompt_tokens: Sequence[int], sampling, seed: int | None) -> None:
        """A job forks from the stream with this prompt; `sampling` is a sampling.SamplingParams."""

    @abstractmethod
    def propose(self, context_tokens: Sequence[int], k: int) -> Proposal:
        """Up to k tokens to follow context_tokens (the job's prompt + emitted tokens so far).

        Returns (tokens, q): q[i] is the distribution tokens[i] was sampled from, or None when
        the proposal is deterministic (each q[i] a point mass on tokens[i]). Greedy jobs need no q.
        Fewer than k tokens (even none) is a valid answer.
        """

    def observe(self, n_accepted: int, n_drafted: int) -> None:
        """Verification kept the first n_accepted of the n_drafted tokens last proposed."""

    def end_job(self) -> None:
        """The job is over; its tokens leave the context (the stream stays)."""

    def close(self) -> None:
        """Free threads, sessions, engines."""

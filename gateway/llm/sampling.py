"""Choosing tokens from logits: greedy (argmax, ties to the lowest id), or temperature / top-k /
top-p with a seeded inverse-CDF draw. The one sampler of the decode loop and of the drafters.

Knows nothing about models, caches or tokenizers: logits in, token ids or probabilities out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 0.0   # <= 0: greedy (argmax)
    top_k: int = 0             # 0: no top-k cut
    top_p: float = 1.0         # 1.0: no nucleus cut

    def __post_init__(self):
        if not np.isfinite(self.temperature) or self.temperature < 0:
            raise ValueError(f"temperature must be a finite number >= 0, got {self.temperature}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0, got {self.top_k}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0.0


def probs_from_logits(logits: np.ndarray, params: SamplingParams) -> np.ndarray:
    """The distribution sampled from. logits [..., V] -> probs [..., V] float64.

    Temperature first, then top-k, then top-p (the smallest top set whose mass reaches top_p,
    always keeping the most likely token), renormalized.
    """
    assert not params.greedy, "greedy decoding compares argmax, it has no distribution"
    z = np.asarray(logits, dtype=np.float64) / params.temperature
    z = z - z.max(axis=-1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=-1, keepdims=True)
    vocab = p.shape[-1]
    if 0 < params.top_k < vocab:
        kth = np.partition(p, vocab - params.top_k, axis=-1)[..., vocab - params.top_k, None]
        p = np.where(p >= kth, p, 0.0)
    if params.top_p < 1.0:
        order = np.argsort(-p, axis=-1, kind="stable")
        sorted_p = np.take_along_axis(p, order, axis=-1)
        mass_before = np.cumsum(sorted_p, axis=-1) - sorted_p
        keep_sorted = mass_before < params.top_p * sorted_p.sum(axis=-1, keepdims=True)
        keep = np.zeros_like(keep_sorted)
        np.put_along_axis(keep, order, keep_sorted, axis=-1)
        p = np.where(keep, p, 0.0)
    return p / p.sum(axis=-1, keepdims=True)


def sample(probs: np.ndarray, rng: np.random.Generator) -> int:
    """One draw from probs [V] (inverse CDF: one uniform per token, reproducible per seed)."""
    cdf = np.cumsum(probs)
    return int(min(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"), len(probs) - 1))


def greedy_token(logits: np.ndarray) -> int:
    """argmax of logits [V]; ties go to the lowest id (np.argmax takes the first maximum)."""
    return int(np.argmax(logits))


def next_token(logits: np.ndarray, params: SamplingParams, rng: np.random.Generator | None = None) -> int:
    """One token id from logits [V]: greedy_token, or a draw from probs_from_logits."""
    if params.greedy:
        return greedy_token(logits)
    if rng is None:
        raise ValueError("sampling with temperature > 0 needs an rng (np.random.default_rng(seed))")
    return sample(probs_from_logits(logits, params), rng)

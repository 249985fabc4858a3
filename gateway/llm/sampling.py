"""Choosing the next token from logits: greedy, or temperature / top-k / top-p with a seeded RNG.

Knows nothing about models, caches or tokenizers: logits in, token id out.
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


def probabilities(logits: np.ndarray, params: SamplingParams) -> np.ndarray:
    """The distribution sampled from: softmax(logits / T) cut to top-k, then to the smallest
    set of tokens whose mass reaches top_p, renormalized. [V] float64."""
    z = np.asarray(logits, dtype=np.float64) / params.temperature
    p = np.exp(z - z.max())
    vocab = p.shape[-1]
    if 0 < params.top_k < vocab:
        kth = np.partition(p, vocab - params.top_k)[vocab - params.top_k]
        p = np.where(p >= kth, p, 0.0)
    p /= p.sum()
    if params.top_p < 1.0:
        order = np.argsort(-p, kind="stable")
        sorted_p = p[order]
        mass_before = np.cumsum(sorted_p) - sorted_p
        keep = np.zeros_like(p, dtype=bool)
        keep[order[mass_before < params.top_p]] = True   # always keeps the most likely token
        p = np.where(keep, p, 0.0)
        p /= p.sum()
    return p


def sample(logits: np.ndarray, params: SamplingParams, rng: np.random.Generator | None = None) -> int:
    """One token id. Greedy ties go to the lowest id (np.argmax)."""
    if params.greedy:
        return int(np.argmax(logits))
    if rng is None:
        raise ValueError("sampling with temperature > 0 needs an rng (np.random.default_rng(seed))")
    p = probabilities(logits, params)
    return int(rng.choice(p.shape[-1], p=p))

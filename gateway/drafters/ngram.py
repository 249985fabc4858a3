"""Prompt-lookup drafter: find the context's last n tokens earlier in the context, propose what followed.

Owns a mirror of the engine's stream tokens (sink + ring, evicted the same way). No model, no q:
proposals are deterministic (point masses). Knows nothing about the engine's K/V.
"""

from __future__ import annotations

from collections import deque
from typing import Sequence

import numpy as np

from gateway.drafters.base import Drafter, Proposal

MAX_NGRAM = 4      # longest suffix tried first: a longer match predicts better
MIN_NGRAM = 2      # a single-token match on logs is mostly noise
DEFAULT_N_SINK = 4
DEFAULT_N_RING = 2048


class NgramDrafter(Drafter):
    name = "ngram"

    def __init__(self, n_sink: int = DEFAULT_N_SINK, n_ring: int = DEFAULT_N_RING,
                 max_ngram: int = MAX_NGRAM, min_ngram: int = MIN_NGRAM):
        if not 1 <= min_ngram <= max_ngram:
            raise ValueError(f"ngram drafter: need 1 <= min_ngram <= max_ngram, got {min_ngram}, {max_ngram}")
        self.n_sink, self.max_ngram, self.min_ngram = n_sink, max_ngram, min_ngram
        self._sink: list[int] = []
        self._ring: deque[int] = deque(maxlen=n_ring)   # evicts oldest first, as the engine's ring
        self._stream = np.zeros(0, dtype=np.int64)      # sink + ring, rebuilt on push

    def push_stream(self, tokens: Sequence[int]) -> None:
        for t in tokens:
            if len(self._sink) < self.n_sink:
                self._sink.append(int(t))
            else:
                self._ring.append(int(t))
        self._stream = np.asarray(self._sink + list(self._ring), dtype=np.int64)

    @property
    def stream_tokens(self) -> list[int]:
        return self._stream.tolist()

    def propose(self, context_tokens: Sequence[int], k: int) -> Proposal:
        ctx = np.asarray(context_tokens, dtype=np.int64)
        full = np.concatenate([self._stream, ctx]) if self._stream.size else ctx
        return lookup(full, k, self.max_ngram, self.min_ngram), None


def lookup(tokens: np.ndarray, k: int, max_ngram: int = MAX_NGRAM, min_ngram: int = MIN_NGRAM) -> list[int]:
    """Up to k tokens that followed the most recent earlier occurrence of the longest suffix n-gram.

    tokens [L]; tries n = max_ngram .. min_ngram; returns [] when no suffix recurs.
    """
    n_tok = len(tokens)
    if k <= 0:
        return []
    for n in range(max_ngram, min_ngram - 1, -1):
        if n_tok <= n:
            continue
        suffix = tokens[n_tok - n:]
        # starts i in [0, L-n-1]: the match ends before the suffix starts, so a continuation exists
        hits = np.flatnonzero(tokens[:n_tok - n] == suffix[0])
        for j in range(1, n):
            hits = hits[tokens[hits + j] == suffix[j]]
        if hits.size:
            start = int(hits[-1]) + n
            return tokens[start:start + k].tolist()
    return []

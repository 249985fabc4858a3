"""Prompt-lookup drafter: find the context's last n tokens earlier in the context, propose what followed.

Owns a mirror of the engine's stream tokens (sink + ring, evicted the same way). No model, no q:
proposals are deterministic (point masses). Knows nothing about the engine's K/V.
"""

from __future__ import annotations

from collections import deque
from typing import Sequence

import numpy as np

from gateway.llm.drafters.base import Drafter, Proposal

MAX_NGRAM = 32     # the match grows up to this: a longer match predicts better (a log line's
                   # shared prefix is ambiguous; with its timestamp and ids it is one line)
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
    """Up to k tokens that followed the most recent earlier occurrence of the longest recurring suffix.

    tokens [L]. The suffix grows one token at a time (back from the end) while an earlier occurrence
    still matches, up to max_ngram; among the occurrences of the longest match (at least min_ngram
    tokens) the most recent wins. Returns [] when no suffix of min_ngram tokens recurs.
    """
    n_tok = len(tokens)
    if k <= 0 or n_tok <= min_ngram:
        return []
    # ends: candidate match ends e (exclusive) with a continuation, e <= L - 1: tokens[e - n:e] == suffix of n
    ends = np.flatnonzero(tokens[:n_tok - 1] == tokens[n_tok - 1]) + 1
    n = 1
    while n < max_ngram and ends.size:
        ext = ends[ends > n]                     # room for one more token before the match
        ext = ext[tokens[ext - n - 1] == tokens[n_tok - n - 1]]
        if not ext.size:
            break
        ends, n = ext, n + 1
    if n < min_ngram or not ends.size:
        return []
    start = int(ends[-1])
    return tokens[start:start + k].tolist()

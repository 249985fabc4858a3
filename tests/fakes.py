"""Fakes shared by the decode-loop tests: a target whose logits are a fixed random function of the
whole prefix (so every conditional distribution is known exactly), keeping a scratch like the engine's."""

from __future__ import annotations

import zlib

import numpy as np


class ScratchLM:
    def __init__(self, salt: int, scale: float, vocab: int):
        self.salt, self.scale, self.vocab = salt, scale, vocab
        self.tokens: list[int] = []

    @property
    def scratch_len(self) -> int:
        return len(self.tokens)

    def logits(self, prefix) -> np.ndarray:
        seed = zlib.crc32(np.asarray([self.salt, *prefix], dtype=np.int64).tobytes())
        return np.random.default_rng(seed).normal(0.0, self.scale, self.vocab)

    def forward_scratch(self, tokens, all_logits=False):
        rows = []
        for t in tokens:
            self.tokens.append(int(t))
            rows.append(self.logits(self.tokens))
        return np.stack(rows) if all_logits else rows[-1]

    def rollback(self, n=0):
        assert 0 <= n <= len(self.tokens)
        del self.tokens[n:]

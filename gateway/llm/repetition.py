"""The repetition guard: a no-repeat n-gram ban over a job's generated tokens.

Greedy decoding of a small model falls into loops (the same sentence again and again until max_tokens).
With the guard, the token that would complete an n-gram already present in the generated tokens (the
prompt excluded) gets -inf, so no n-gram of length n occurs twice in an answer. Any loop of any period is
thereby broken at most n tokens into its second round. One exception: log lines of one template share
long runs of tokens, and an answer quoting lines its prompt holds (quoted store lines, a query's result)
must not be bent, so an n-gram may occur in the answer once more than it occurs in the prompt (`allow`).
n is chosen in docs/perf/2026-12-02-no-repeat-ngram.md.

It is a logits processor of the decode loop (gateway.llm.speculative): applied identically to every
target row at verification, so speculative decoding stays exact (greedy output with a drafter equals the
output without one). Knows tokens only.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


class NoRepeatNgram:
    """One job's ban: __call__(generated, logits, greedy) -> logits with the banned tokens at -inf.

    Keeps an index (n-1 tokens -> counts of the tokens that followed them) over the last `generated`
    it saw and syncs it to each new one (the decode loop calls it with prefixes that grow, or shrink
    where drafts were rejected), so a row costs the tokens that changed, not the whole answer."""

    def __init__(self, n: int, allow: Sequence[int] = ()) -> None:
        """allow: tokens (the prompt) whose n-grams the answer may repeat as often as they occur there."""
        if n < 2:
            raise ValueError(f"no_repeat_ngram must be >= 2 (0 turns the guard off), got {n}")
        self.n = n
        self._seq: list[int] = []
        self._next: dict[tuple[int, ...], dict[int, int]] = {}
        self._allowed: dict[tuple[int, ...], int] = {}
        allow = [int(t) for t in allow]
        for i in range(len(allow) - n + 1):
            key = tuple(allow[i:i + n])
            self._allowed[key] = self._allowed.get(key, 0) + 1

    def _add(self, end: int) -> None:
        """Index the n-gram that ends at self._seq[end]."""
        if end >= self.n - 1:
            key = tuple(self._seq[end - self.n + 1:end])
            follow = self._next.setdefault(key, {})
            follow[self._seq[end]] = follow.get(self._seq[end], 0) + 1

    def _drop(self, end: int) -> None:
        if end >= self.n - 1:
            key = tuple(self._seq[end - self.n + 1:end])
            follow = self._next[key]
            tok = self._seq[end]
            follow[tok] -= 1
            if not follow[tok]:
                del follow[tok]
                if not follow:
                    del self._next[key]

    def _sync(self, generated: Sequence[int]) -> None:
        seq = self._seq
        k = min(len(seq), len(generated))
        while k and seq[:k] != list(generated[:k]):   # the shared prefix: drafts past it were rejected
            k -= 1
        while len(seq) > k:
            self._drop(len(seq) - 1)
            seq.pop()
        for tok in generated[k:]:
            seq.append(int(tok))
            self._add(len(seq) - 1)

    def banned(self, generated: Sequence[int]) -> list[int]:
        """The tokens that would complete an n-gram already in `generated`."""
        self._sync(generated)
        if len(self._seq) < self.n - 1:
            return []
        key = tuple(self._seq[len(self._seq) - self.n + 1:])
        follow = self._next.get(key, {})
        if not self._allowed:
            return list(follow)
        return [t for t, c in follow.items() if c > self._allowed.get(key + (t,), 0)]

    def __call__(self, generated: Sequence[int], logits: np.ndarray, greedy: bool) -> np.ndarray:
        ban = self.banned(generated)
        if not ban:
            return logits
        out = np.array(logits, dtype=np.float32, copy=True)
        out[ban] = -np.inf
        return out


def chain(*processors):
    """Processors applied in order (None entries skipped); None when there are none."""
    procs = [p for p in processors if p is not None]
    if not procs:
        return None
    if len(procs) == 1:
        return procs[0]

    def apply(generated: Sequence[int], logits: np.ndarray, greedy: bool) -> np.ndarray:
        for p in procs:
            logits = p(generated, logits, greedy)
        return logits
    return apply


def max_repeat(tokens: Sequence[int], n: int) -> int:
    """How many times the most frequent n-gram of `tokens` occurs (0 for fewer than n tokens)."""
    counts: dict[tuple[int, ...], int] = {}
    for i in range(len(tokens) - n + 1):
        key = tuple(tokens[i:i + n])
        counts[key] = counts.get(key, 0) + 1
    return max(counts.values(), default=0)

"""Deferred drafting: the inner drafter runs on its own thread, one block ahead of verification.

While the target verifies block n, the thread drafts block n+1 assuming block n is accepted in
full (and that the bonus token is the drafter's own next guess). If verification disagrees the
speculative block is discarded and the drafter restarts from what the target emitted.
Knows nothing about the rule; every inner-drafter call happens on that one thread (the drafter's own).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Sequence

from gateway.llm.drafters.base import Drafter, Proposal


class DeferredDrafter(Drafter):
    def __init__(self, inner: Drafter):
        self.inner = inner
        self.name = f"{inner.name}+deferred"
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"draft-{inner.name}")
        self._ahead: Future | None = None           # drafting of the speculative next block
        self._ahead_context: list[int] | None = None  # context that block assumes (incl. the guessed bonus)
        self._k_ahead = 0
        self.hits = 0       # proposals served from the block drafted ahead
        self.misses = 0     # speculative blocks discarded

    # the stream and job boundaries go through that thread so they stay ordered with drafting
    def push_stream(self, tokens: Sequence[int]) -> None:
        self._drop_ahead()
        self._pool.submit(self.inner.push_stream, list(tokens)).result()

    def begin_job(self, prompt_tokens, sampling, seed) -> None:
        self._drop_ahead()
        self._pool.submit(self.inner.begin_job, list(prompt_tokens), sampling, seed).result()

    def propose(self, context_tokens: Sequence[int], k: int) -> Proposal:
        context = list(context_tokens)
        tokens: list[int] = []
        q = None
        served = False
        if self._ahead is not None:
            guess_tokens, guess_q = self._ahead.result()
            if self._ahead_context == context and len(guess_tokens) > 0:
                tokens, q = guess_tokens[:k], None if guess_q is None else guess_q[:k]
                served = True
                self.hits += 1
            else:
                self.misses += 1
            self._ahead = None
        if not served:
            tokens, q = self._pool.submit(self.inner.propose, context, k).result()
        self._launch_ahead(context + list(tokens), k)
        return list(tokens), q

    def _launch_ahead(self, assumed: list[int], k: int) -> None:
        """Draft k+1 tokens after `assumed`: the first is the guess of the bonus/next token."""
        self._k_ahead = k

        def ahead() -> Proposal:
            toks, q = self.inner.propose(assumed, k + 1)
            if not toks:
                return [], None
            self._ahead_context = assumed + [toks[0]]
            return list(toks[1:]), None if q is None else q[1:]

        self._ahead_context = None
        self._ahead = self._pool.submit(ahead)

    def observe(self, n_accepted: int, n_drafted: int) -> None:
        self._pool.submit(self.inner.observe, n_accepted, n_drafted)

    def end_job(self) -> None:
        self._drop_ahead()
        self._pool.submit(self.inner.end_job).result()

    def _drop_ahead(self) -> None:
        if self._ahead is not None:
            self._ahead.result()   # a native call cannot be interrupted; wait for it, then forget it
            self._ahead = None

    def close(self) -> None:
        self._drop_ahead()
        self._pool.submit(self.inner.close).result()
        self._pool.shutdown(wait=True)

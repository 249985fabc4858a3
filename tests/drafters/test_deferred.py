"""The deferred pipeline: the drafter thread runs a block ahead; output stays the target's own and
a wrong assumption costs only the discarded block."""

from __future__ import annotations


import numpy as np

from tests.fakes import ScratchLM
from gateway.llm.drafters.base import Drafter
from gateway.llm.drafters.deferred import DeferredDrafter
from gateway.llm.sampling import SamplingParams as Sampling
from gateway.llm.speculative import speculative_generate

VOCAB = 6


class TinyLM(ScratchLM):
    """Logits a fixed random function of the prefix; a scratch like the engine's."""

    def __init__(self, salt: int):
        super().__init__(salt, 2.0, VOCAB)


class GreedyLMDrafter(Drafter):
    """Greedy drafts from a TinyLM; wrong every `err_every`-th absolute position (if set)."""

    name = "tiny"

    def __init__(self, lm, err_every=0):
        self.lm, self.err_every, self.calls = lm, err_every, 0

    def propose(self, context, k):
        self.calls += 1
        ctx = list(context)
        out = []
        for _ in range(k):
            t = int(np.argmax(self.lm.logits(ctx)))
            if self.err_every and len(ctx) % self.err_every == 0:
                t = (t + 1) % VOCAB
            out.append(t)
            ctx.append(t)
        return out, None


def target_greedy(lm, prompt, n):
    out = []
    for _ in range(n):
        out.append(int(np.argmax(lm.logits(prompt + out))))
    return out


def test_deferred_hits_when_drafts_are_right():
    target = TinyLM(1)
    drafter = DeferredDrafter(GreedyLMDrafter(TinyLM(1)))
    res = speculative_generate(target, drafter, [0, 1], 40, Sampling())
    drafter.close()
    assert res.tokens == target_greedy(TinyLM(1), [0, 1], 40)
    assert drafter.hits >= 3 and drafter.misses == 0
    assert res.stats.acceptance == 1.0


def test_deferred_discards_wrong_speculation_and_stays_exact():
    target = TinyLM(1)
    drafter = DeferredDrafter(GreedyLMDrafter(TinyLM(1), err_every=7))
    res = speculative_generate(target, drafter, [0, 1], 60, Sampling())
    drafter.close()
    assert res.tokens == target_greedy(TinyLM(1), [0, 1], 60)
    assert drafter.misses > 0 and res.stats.n_recovered > 0
    assert target.scratch_len == 0

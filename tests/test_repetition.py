"""The repetition guard (gateway.llm.repetition): a looping greedy target stops looping, the ban index
equals the naive definition, and speculative decoding with the guard stays exact."""

from __future__ import annotations


import numpy as np
import pytest

from tests.fakes import ScratchLM
from gateway.llm.repetition import NoRepeatNgram, chain, max_repeat
from gateway.llm.sampling import SamplingParams
from gateway.llm.speculative import speculative_generate
from gateway.settings import BARE_ENGINE

VOCAB = 16
PERIOD = 5


class LoopLM(ScratchLM):
    """Greedy argmax loops: after token t comes (t + 1) % PERIOD by a wide margin; the other logits are a
    fixed random function of the prefix (so the second choice varies). Keeps a scratch like the engine."""

    def __init__(self, salt: int = 1):
        super().__init__(salt, 1.0, VOCAB)

    def logits(self, prefix) -> np.ndarray:
        row = super().logits(prefix).astype(np.float32)
        row[(prefix[-1] + 1) % PERIOD] += 10.0
        return row


class LoopDrafter:
    """Proposes the loop's continuation (what prompt lookup proposes on a looping answer), with a wrong
    token now and then: drafts the guard bans must be rejected, the others accepted."""

    name = "loop"

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def begin_job(self, prompt, sampling, seed):
        pass

    def propose(self, context, k):
        out, last = [], context[-1]
        for _ in range(k):
            last = int(self.rng.integers(VOCAB)) if self.rng.random() < 0.2 else (last + 1) % PERIOD
            out.append(last)
        return out, None

    def observe(self, n_accepted, n_drafted):
        pass

    def end_job(self):
        pass


def naive_banned(generated, n, allow=()):
    """t is banned when tail + t already occurs in generated more often than in allow."""
    if len(generated) < n - 1:
        return set()
    tail = list(generated[len(generated) - n + 1:])
    grams = [list(generated[j:j + n]) for j in range(len(generated) - n + 1)]
    allowed = [list(allow[j:j + n]) for j in range(len(allow) - n + 1)]
    return {g[-1] for g in grams if g[:-1] == tail and grams.count(g) > allowed.count(g)}


def test_looping_target_loops_without_the_guard():
    res = speculative_generate(LoopLM(), None, [0, 3], 60, SamplingParams())
    assert max_repeat(res.tokens, 8) > 5


@pytest.mark.parametrize("n", [3, 4, 8, 10])
def test_guard_leaves_no_repeated_ngram(n):
    res = speculative_generate(LoopLM(), None, [0, 3], 120, SamplingParams(), no_repeat_ngram=n)
    assert len(res.tokens) == 120
    assert max_repeat(res.tokens, n) == 1
    # until the loop's first n-gram would come round again, the guard changes nothing
    plain = speculative_generate(LoopLM(), None, [0, 3], 120, SamplingParams())
    assert res.tokens[:PERIOD + n - 1] == plain.tokens[:PERIOD + n - 1]


@pytest.mark.parametrize("n", [4, 10])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_guard_keeps_speculative_greedy_exact(n, seed):
    ref = speculative_generate(LoopLM(salt=seed), None, [seed % PERIOD], 150, SamplingParams(), no_repeat_ngram=n)
    target = LoopLM(salt=seed)
    res = speculative_generate(target, LoopDrafter(seed), [seed % PERIOD], 150, SamplingParams(),
                               no_repeat_ngram=n)
    assert res.tokens == ref.tokens
    assert res.stats.n_accepted > 0 and res.stats.n_recovered > 0
    assert target.scratch_len == 0


def test_answer_may_repeat_what_the_prompt_repeats():
    """Log lines of one template share long runs: quoting them from the prompt is not bent, but the
    answer may not repeat a run more often than the prompt does (+1)."""
    loop = [(i + 1) % PERIOD for i in range(3 * PERIOD)]           # the loop, three rounds, in the prompt
    res = speculative_generate(LoopLM(), None, [0, 7, *loop, 0], 60, SamplingParams(), no_repeat_ngram=4)
    assert max_repeat(res.tokens, 4) == 4
    none = speculative_generate(LoopLM(), None, [0, 7, 0], 60, SamplingParams(), no_repeat_ngram=4)
    assert max_repeat(none.tokens, 4) == 1


def test_guard_is_applied_before_another_processor():
    seen = []

    def spy(generated, logits, greedy):
        seen.append(np.isneginf(logits).any())
        return logits
    speculative_generate(LoopLM(), None, [0], 40, SamplingParams(), no_repeat_ngram=4, logits_processor=spy)
    assert any(seen)


def test_ban_index_equals_the_definition_as_prefixes_grow_and_shrink():
    rng = np.random.default_rng(0)
    for n, allow in ((2, ()), (3, ()), (5, ()), (3, [0, 1, 2, 0, 1, 2, 1, 1, 1]), (2, [0, 0, 1, 2])):
        guard = NoRepeatNgram(n, allow)
        seq: list[int] = []
        for _ in range(400):
            if seq and rng.random() < 0.3:            # drafts rejected: the prefix shrinks
                del seq[len(seq) - int(rng.integers(1, min(len(seq), 6) + 1)):]
            else:
                seq.extend(int(t) for t in rng.integers(0, 3, int(rng.integers(1, 4))))
            assert set(guard.banned(seq)) == naive_banned(seq, n, allow)


def test_guard_refuses_n_below_two_and_chain_skips_none():
    with pytest.raises(ValueError):
        NoRepeatNgram(1)
    assert chain(None, None) is None
    g = NoRepeatNgram(2)
    assert chain(None, g) is g


@pytest.mark.models
def test_smollm_greedy_with_guard_and_ngram_drafter_is_exact(smollm_path, loghub_dir):
    """The real engine on repetitive log text (where prompt lookup drafts loops): plain greedy with the
    guard == greedy with the guard and the n-gram drafter, token for token; and no 6-gram repeats."""
    from gateway.llm.drafters import make_drafter
    from gateway.llm.engine import Engine
    from gateway.llm.tokenizer import Tokenizer
    tok = Tokenizer.from_gguf(smollm_path)
    lines = (loghub_dir / "HDFS" / "HDFS_2k.log").read_text(errors="replace").splitlines()[:30]
    prompt = tok.encode("\n".join(lines))[:160]
    engine = Engine(str(smollm_path), n_sink=4, n_ring=64, n_scratch=160 + 96 + 32, n_threads=2, **BARE_ENGINE.model_dump())
    ref = speculative_generate(engine, None, prompt, 96, SamplingParams(), no_repeat_ngram=6)
    drafter = make_drafter("ngram", engine, n_threads=2)
    try:
        drafter.push_stream(list(prompt))
        res = speculative_generate(engine, drafter, prompt, 96, SamplingParams(), no_repeat_ngram=6)
    finally:
        drafter.close()
    assert res.tokens == ref.tokens
    assert res.stats.n_accepted > 0
    assert max_repeat(ref.tokens, 6) == 1
    plain = speculative_generate(engine, None, prompt, 96, SamplingParams())
    assert max_repeat(plain.tokens, 6) > 1      # the text does loop without the guard

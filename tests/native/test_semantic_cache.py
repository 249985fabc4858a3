"""The block policies of the KV cache (native/kv_semantic.cpp): `semantic` (pooled hidden states) and
`novelty` (caller-given importance): block bookkeeping, which block goes, keys still position-correct
after compaction, no allocation after init, exact rollback, batch invariance; on tiny random-weight
GGUFs and on SmolLM2 135M."""

from __future__ import annotations

import numpy as np
import pytest

from gateway import _native
from gateway.settings import BARE_ENGINE
from tools.convert import random_gguf

BLOCK = 8


@pytest.fixture(scope="module", params=["llama", "qwen2"])
def tiny_path(request, tmp_path_factory):
    return random_gguf.write_tiny(tmp_path_factory.mktemp("tiny") / f"{request.param}.gguf", request.param)


def make(path, **kw):
    opts = dict(n_sink=4, n_ring=32, n_scratch=24, n_threads=2, kv_policy="semantic", kv_block=BLOCK, act_precision="q8x2")
    opts.update(kw)
    return _native.Engine(str(path), **opts)


def tokens(n, seed=1, vocab=random_gguf.TINY_VOCAB):
    return np.random.default_rng(seed).integers(0, vocab, n).astype(np.int32)


def scratch_logits(e, toks):
    out = np.empty((len(toks), e.n_vocab), np.float32)
    e.forward_scratch(toks, out, True)
    return out


def test_bookkeeping_blocks_and_kept_indices(tiny_path):
    e = make(tiny_path)
    e.prefill_stream(tokens(301, seed=2))
    assert (e.kv_policy, e.sink_used, e.stream_total) == ("semantic", 4, 301)
    kept = e.kept_stream_index()
    assert kept.size == e.stream_len == 4 + e.ring_used and e.ring_used > e.n_ring - BLOCK
    assert list(kept[:4]) == [0, 1, 2, 3]
    ring = kept[4:]
    assert np.all(np.diff(ring) > 0), "ring is oldest first"
    # whole blocks of consecutive stream indices, aligned to the stream's block starts (4 + k*BLOCK)
    for b in range(0, ring.size, BLOCK):
        blk = ring[b:b + BLOCK]
        assert (blk[0] - 4) % BLOCK == 0 and np.array_equal(blk, np.arange(blk[0], blk[0] + blk.size))
    assert ring[-1] == 300, "the newest token is always kept"
    s = e.evict_stats
    opened, listed = -(-(301 - 4) // BLOCK), -(-e.ring_used // BLOCK)
    assert s["evicted_similar"] + s["evicted_oldest"] == opened - listed
    sr = make(tiny_path, kv_policy="sink_ring")
    sr.prefill_stream(tokens(301, seed=2))
    assert sr.evict_stats == {"evicted_similar": 0, "evicted_oldest": 0, "evicted_important": 0, "shifted_keys": 0,
                              "evict_seconds": 0.0}
    assert list(sr.kept_stream_index()) == [0, 1, 2, 3, *range(301 - 32, 301)]


def test_keeps_the_odd_block_out_and_sink_ring_does_not(tiny_path):
    # A block-aligned period-8 stream with one different block planted early: the repeated blocks are
    # near-identical neighbours and go first; the planted block stays. sink_ring drops it.
    pattern, planted = tokens(BLOCK, seed=3), tokens(BLOCK, seed=4)
    stream = np.concatenate([tokens(4, seed=5), np.tile(pattern, 6), planted, np.tile(pattern, 30)])
    where = 4 + 6 * BLOCK
    kept = {}
    for policy in ("semantic", "sink_ring"):
        e = make(tiny_path, kv_policy=policy, max_chunk=BLOCK)
        e.prefill_stream(stream)
        kept[policy] = set(e.kept_stream_index().tolist())
    assert set(range(where, where + BLOCK)) <= kept["semantic"]
    assert not set(range(where, where + BLOCK)) & kept["sink_ring"]


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_kept_blocks_attend_like_a_fresh_window(tmp_path, arch):
    """After evictions from the middle, the kept blocks are re-rotated to a consecutive window: with one
    layer (a key depends on its token only) a query sees what a fresh stream of just the kept tokens shows,
    up to rounding."""
    path = random_gguf.write_tiny(tmp_path / f"one_{arch}.gguf", arch, n_layer=1)
    pattern = tokens(BLOCK, seed=30)
    parts = [tokens(4, seed=31)]
    for i in range(40):  # repeats with rare distinct blocks: evictions land in the middle of the ring
        parts.append(tokens(BLOCK, seed=100 + i) if i % 5 == 2 else pattern)
    stream, probe = np.concatenate(parts), tokens(5, seed=22)
    old = make(path, n_scratch=8, max_chunk=BLOCK)
    old.prefill_stream(stream)
    s = old.evict_stats
    assert s["evicted_similar"] > 0 and s["shifted_keys"] > 0
    kept = old.kept_stream_index()
    assert not np.array_equal(kept[4:], np.arange(stream.size - old.ring_used, stream.size)), "not a plain FIFO"
    fresh = make(path, kv_policy="sink_ring", n_scratch=8, max_chunk=BLOCK)
    fresh.prefill_stream(stream[kept])
    a, b = scratch_logits(old, probe), scratch_logits(fresh, probe)
    np.testing.assert_allclose(a, b, rtol=0, atol=2e-4 * np.abs(b).max())
    # the check can fail: the same tokens with two blocks at each other's positions answer differently
    swapped = stream[kept].copy()
    swapped[4:4 + BLOCK], swapped[4 + BLOCK:4 + 2 * BLOCK] = stream[kept][4 + BLOCK:4 + 2 * BLOCK], stream[kept][4:4 + BLOCK]
    assert not np.array_equal(swapped, stream[kept])
    other = make(path, kv_policy="sink_ring", n_scratch=8, max_chunk=BLOCK)
    other.prefill_stream(swapped)
    assert np.abs(scratch_logits(other, probe) - b).max() > 20 * 2e-4 * np.abs(b).max()


def test_no_allocation_after_init_with_evictions(tiny_path):
    e = make(tiny_path)
    out = np.empty(e.n_vocab, np.float32)
    one = np.zeros(1, np.int32)
    e.prefill_stream(tokens(8, seed=5), out)  # warm-up of the binding
    e.forward_scratch(one, out)
    e.rollback(0)
    start = e.call_allocs
    e.prefill_stream(tokens(400, seed=6), out)  # ~50 evictions, compaction both ways
    for i in range(20):
        one[0] = (7 * i) % e.n_vocab
        e.forward_scratch(one, out)
    e.rollback(0)
    e.prefill_stream(tokens(200, seed=7), out)
    assert e.evict_stats["evicted_similar"] + e.evict_stats["evicted_oldest"] > 40
    assert e.call_allocs == start == 0


def test_rollback_and_batch_invariance(tiny_path):
    e = make(tiny_path)
    e.prefill_stream(tokens(250, seed=8))
    c0 = (e.stream_checksum(), e.sink_used, e.ring_used, e.stream_total, tuple(e.kept_stream_index()))
    toks = tokens(6, seed=9)
    batched = scratch_logits(e, toks)
    e.rollback(2)
    scratch_logits(e, tokens(3, seed=10))
    e.rollback(0)
    stepped = np.concatenate([scratch_logits(e, toks[i:i + 1]) for i in range(len(toks))])
    e.rollback(0)
    assert np.array_equal(batched, stepped)
    assert (e.stream_checksum(), e.sink_used, e.ring_used, e.stream_total, tuple(e.kept_stream_index())) == c0
    e.prefill_stream(tokens(1, seed=11))
    assert e.stream_checksum() != c0[0]


def test_threads_and_stream_chunking_do_not_change_the_cache(tiny_path):
    stream = tokens(300, seed=12)
    ref = make(tiny_path, n_threads=2, max_chunk=BLOCK)
    ref.prefill_stream(stream)
    for kw in (dict(n_threads=1, max_chunk=BLOCK), dict(n_threads=3, max_chunk=BLOCK)):
        e = make(tiny_path, **kw)
        e.prefill_stream(stream)
        assert e.stream_checksum() == ref.stream_checksum(), kw
    # one call, or one call per chunk of the same plan (the sink's 4, then one block each): the
    # partly summed embeddings and the block list carry over between calls
    e = make(tiny_path, max_chunk=BLOCK)
    e.prefill_stream(stream[:4])
    for i in range(4, stream.size, BLOCK):
        e.prefill_stream(stream[i:i + BLOCK])
    assert e.stream_checksum() == ref.stream_checksum()


def test_bad_options_are_named(tiny_path):
    with pytest.raises(ValueError, match="multiple of the block size"):
        make(tiny_path, n_ring=36)
    with pytest.raises(ValueError, match="at least 2 blocks"):
        make(tiny_path, n_ring=8)
    with pytest.raises(ValueError, match="embedding layer"):
        make(tiny_path, sem_layer=99)
    with pytest.raises(ValueError, match="threshold"):
        make(tiny_path, sem_threshold=1.5)
    with pytest.raises(ValueError, match="novelty"):
        make(tiny_path, kv_policy="lru")
    with pytest.raises(ValueError, match="keep"):
        make(tiny_path, kv_policy="novelty", sem_keep=2.0)
    with pytest.raises(ValueError, match=">= 0"):
        make(tiny_path, kv_policy="novelty").set_stream_importance(-1.0)


def novelty_run(path, marks, keep=0.5, n_ring=64):
    """Blocks of BLOCK tokens, importance 1 for the block numbers in `marks` (a set) or the importance
    it maps them to (a dict); kept block numbers."""
    e = make(path, kv_policy="novelty", n_ring=n_ring, sem_keep=keep, max_chunk=BLOCK)
    e.prefill_stream(tokens(4, seed=40))
    grade = marks if isinstance(marks, dict) else dict.fromkeys(marks, 1.0)
    for b in range(40):
        e.set_stream_importance(grade.get(b, 0.0))
        e.prefill_stream(tokens(BLOCK, seed=41 + b))
    ring = e.kept_stream_index()[4:]
    return e, sorted({int(i - 4) // BLOCK for i in ring})


def test_novelty_keeps_important_blocks_up_to_the_share(tiny_path):
    e, kept = novelty_run(tiny_path, marks={3, 10, 17})
    assert kept == [3, 10, 17, 35, 36, 37, 38, 39]            # 8 blocks: the 3 marked, then the newest
    assert e.evict_stats["evicted_important"] == 0 and e.evict_stats["shifted_keys"] > 0
    # over the share (keep 0.5 of 8 blocks = 4), the oldest important blocks go
    e, kept = novelty_run(tiny_path, marks={1, 3, 5, 7, 9, 11, 13})
    assert kept == [7, 9, 11, 13, 36, 37, 38, 39]
    assert e.evict_stats["evicted_important"] == 3
    # keep = 0: nothing is protected, the policy is the ring's FIFO order
    e, kept = novelty_run(tiny_path, marks={3, 10, 17}, keep=0.0)
    assert kept == list(range(32, 40))


def test_novelty_lets_the_least_important_go_first_over_the_share(tiny_path):
    # 7 marked blocks, room for 4 (keep 0.5 of 8): over the share the least important goes, the oldest
    # of equals first: 3 and 7 (0.5), then 13 (0.25) as soon as it is complete; the older 1 and 5 stay
    e, kept = novelty_run(tiny_path, marks={1: 1.0, 3: 0.5, 5: 1.0, 7: 0.5, 9: 0.5, 11: 1.0, 13: 0.25})
    assert kept == [1, 5, 9, 11, 36, 37, 38, 39]
    assert e.evict_stats["evicted_important"] == 3


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_novelty_kept_blocks_attend_like_a_fresh_window(tmp_path, arch):
    path = random_gguf.write_tiny(tmp_path / f"one_{arch}.gguf", arch, n_layer=1)
    e = make(path, kv_policy="novelty", n_scratch=8, max_chunk=BLOCK, sem_keep=0.5)
    stream = [tokens(4, seed=50)]
    e.prefill_stream(stream[0])
    for b in range(30):
        e.set_stream_importance(1.0 if b in (2, 9) else 0.0)
        stream.append(tokens(BLOCK, seed=51 + b))
        e.prefill_stream(stream[-1])
    stream = np.concatenate(stream)
    kept = e.kept_stream_index()
    fresh = make(path, kv_policy="sink_ring", n_scratch=8, max_chunk=BLOCK)
    fresh.prefill_stream(stream[kept])
    probe = tokens(5, seed=22)
    a, b = scratch_logits(e, probe), scratch_logits(fresh, probe)
    np.testing.assert_allclose(a, b, rtol=0, atol=2e-4 * np.abs(b).max())


@pytest.mark.models
def test_smollm_semantic_stream_rollback_and_batch_invariance(smollm_path):
    from gateway.llm.engine import Engine
    eng = Engine(smollm_path, n_sink=4, n_ring=128, n_scratch=32, kv_policy="semantic", kv_block=32, n_threads=2,
                 act_precision=BARE_ENGINE.act_precision)
    line = "Nov 29 12:00:{:02d} plc-3 cycle_counter={} state=RUN\n"
    text = "".join(line.format(i % 60, 1000 + i) for i in range(40))
    text += "Nov 29 12:01:00 plc-3 ERROR E-STOP jam at conveyor 7\n" + "".join(line.format(i % 60, 2000 + i) for i in range(60))
    eng.prefill_stream(eng.tokenizer.encode(text))
    s = eng.stats()
    assert s["kv_policy"] == "semantic" and s["evicted_similar"] + s["evicted_oldest"] > 0
    before = (eng.stream_checksum(), eng.stream_len, eng.stream_total)
    toks = eng.tokenizer.encode(" ERROR E-STOP")[:4]
    batched = eng.forward_scratch(toks, all_logits=True)
    eng.rollback(0)
    stepped = np.stack([eng.forward_scratch([t]) for t in toks])
    eng.rollback(0)
    assert np.array_equal(batched, stepped)
    assert (eng.stream_checksum(), eng.stream_len, eng.stream_total) == before

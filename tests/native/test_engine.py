"""native engine mechanics on tiny random-weight GGUFs: batch invariance, no allocation after
init, rollback leaves sink+ring bit-identical, ring bookkeeping, limits with clear errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gateway import _native

from tools.convert import random_gguf  # noqa: E402


@pytest.fixture(scope="module", params=["llama", "qwen2"])
def tiny_path(request, tmp_path_factory) -> Path:
    return random_gguf.write_tiny(tmp_path_factory.mktemp("tiny") / f"{request.param}.gguf", request.param)


def make(path, **kw):
    opts = dict(n_sink=4, n_ring=32, n_scratch=24, n_threads=2, kv_policy="sink_ring", act_precision="q8x2")
    opts.update(kw)
    return _native.Engine(str(path), **opts)


def tokens(n, seed=1, vocab=random_gguf.TINY_VOCAB):
    return np.random.default_rng(seed).integers(0, vocab, n).astype(np.int32)


def scratch_logits(e, toks, all_logits=True):
    out = np.empty((len(toks), e.n_vocab) if all_logits else e.n_vocab, np.float32)
    e.forward_scratch(toks, out, all_logits)
    return out


def decode_logits(e, toks):
    rows = []
    for t in toks:
        rows.append(scratch_logits(e, np.array([t], np.int32), all_logits=False))
    return np.stack(rows)


@pytest.mark.parametrize("T", [2, 4, 8])
def test_batch_invariance_bit_identical(tiny_path, T):
    e = make(tiny_path)
    e.prefill_stream(tokens(50, seed=2))      # ring wrapped: sink + 32 ring entries as context
    toks = tokens(T, seed=3)
    batched = scratch_logits(e, toks)
    e.rollback(0)
    stepped = decode_logits(e, toks)
    e.rollback(0)
    assert batched.shape == stepped.shape == (T, e.n_vocab)
    assert np.array_equal(batched, stepped), f"max diff {np.abs(batched - stepped).max()}"


def test_chunking_and_threads_do_not_change_results(tiny_path):
    toks = tokens(20, seed=4)
    ref = scratch_logits(make(tiny_path, max_chunk=64, n_threads=2), toks)
    for kw in (dict(max_chunk=3, n_threads=2), dict(max_chunk=64, n_threads=1), dict(max_chunk=7, n_threads=3)):
        assert np.array_equal(scratch_logits(make(tiny_path, **kw), toks), ref), kw


def test_decode_allocates_nothing_after_init(tiny_path):
    before_init = _native.alloc_count()
    e = make(tiny_path)
    assert _native.alloc_count() > before_init, "the counter must see the engine's own buffers"
    out = np.empty(e.n_vocab, np.float32)
    stream = tokens(40, seed=5)
    one = np.zeros(1, np.int32)
    e.prefill_stream(stream[:8], out)                    # warm-up: first calls may set up pybind11 state
    e.forward_scratch(one, out)
    e.rollback(0)
    start = e.call_allocs
    for i in range(100):
        one[0] = (7 * i) % e.n_vocab
        e.forward_scratch(one, out)
        if e.scratch_used == e.n_scratch:
            e.rollback(0)
    e.rollback(0)
    e.prefill_stream(stream, out)                        # stream chunks with ring eviction too
    assert e.call_allocs == start == 0


def test_rollback_leaves_stream_bit_identical(tiny_path):
    e = make(tiny_path)
    e.prefill_stream(tokens(45, seed=6))
    c0, s0 = e.stream_checksum(), (e.sink_used, e.ring_used, e.stream_total)
    scratch_logits(e, tokens(10, seed=7))
    scratch_logits(e, tokens(5, seed=8))
    e.rollback(12)
    assert e.scratch_used == 12
    scratch_logits(e, tokens(3, seed=9))
    e.rollback(0)
    assert e.stream_checksum() == c0
    assert (e.sink_used, e.ring_used, e.stream_total) == s0
    e.prefill_stream(tokens(1, seed=10))
    assert e.stream_checksum() != c0                     # the checksum does see the stream


def test_job_after_rollback_repeats_exactly(tiny_path):
    e = make(tiny_path)
    e.prefill_stream(tokens(40, seed=11))
    toks = tokens(6, seed=12)
    a = scratch_logits(e, toks)
    e.rollback(0)
    b = scratch_logits(e, toks)
    assert np.array_equal(a, b)


def test_ring_bookkeeping_sink_ring_and_fifo(tiny_path):
    e = make(tiny_path, n_sink=4, n_ring=32)
    e.prefill_stream(tokens(3))
    assert (e.sink_used, e.ring_used, e.stream_len) == (3, 0, 3)
    e.prefill_stream(tokens(100, seed=2))
    assert (e.sink_used, e.ring_used, e.stream_len, e.stream_total) == (4, 32, 36, 103)
    f = make(tiny_path, kv_policy="fifo", n_sink=4, n_ring=32)
    assert f.n_sink == 0 and f.kv_policy == "fifo"
    f.prefill_stream(tokens(100, seed=2))
    assert (f.sink_used, f.ring_used, f.stream_total) == (0, 32, 100)


def test_sink_keeps_the_stream_start(tiny_path):
    # The sink is never evicted: two streams that differ only in their first 4 tokens still
    # differ after the ring has wrapped many times; with fifo they converge.
    a_tokens, b_tokens = tokens(200, seed=13), tokens(200, seed=13)
    b_tokens[:4] = (b_tokens[:4] + 1) % random_gguf.TINY_VOCAB
    probe = tokens(3, seed=14)
    res = {}
    for policy in ("sink_ring", "fifo"):
        outs = []
        for stream in (a_tokens, b_tokens):
            e = make(tiny_path, kv_policy=policy, n_sink=4, n_ring=16, max_chunk=16)
            e.prefill_stream(stream)
            outs.append(scratch_logits(e, probe))
        res[policy] = np.array_equal(*outs)
    assert res == {"sink_ring": False, "fifo": True}


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("policy", ["sink_ring", "fifo"])
def test_evicted_stream_attends_like_a_fresh_window(tmp_path, arch, policy):
    """Keys are rotated once, by stream index (sinks by position): after eviction a query must see the
    cache exactly as a fresh stream of the same window at cache positions 0.. would. With one layer a
    key depends on its token only, so the two agree up to the rounding of different rotation angles."""
    path = random_gguf.write_tiny(tmp_path / f"one_{arch}.gguf", arch, n_layer=1)
    stream, probe = tokens(300, seed=21), tokens(5, seed=22)
    old = make(path, kv_policy=policy, n_sink=4, n_ring=24, n_scratch=8, max_chunk=8)
    old.prefill_stream(stream)                                   # 300 tokens: the ring wrapped ~12 times
    n_sink = old.n_sink
    window = np.concatenate([stream[:n_sink], stream[-old.ring_used:]]).astype(np.int32)
    fresh = make(path, kv_policy=policy, n_sink=4, n_ring=24, n_scratch=8, max_chunk=8)
    fresh.prefill_stream(window)                                  # same window, no eviction
    assert fresh.stream_len == old.stream_len == len(window)
    a, b = scratch_logits(old, probe), scratch_logits(fresh, probe)
    np.testing.assert_allclose(a, b, rtol=0, atol=2e-4 * np.abs(b).max())
    # And the window matters: a stream whose ring holds other tokens answers differently.
    other = make(path, kv_policy=policy, n_sink=4, n_ring=24, n_scratch=8, max_chunk=8)
    other.prefill_stream(np.concatenate([stream[:n_sink], tokens(24, seed=23)]).astype(np.int32))
    assert np.abs(scratch_logits(other, probe) - b).max() > 100 * 2e-4 * np.abs(b).max()


# A prefill on a thread with a 1 MiB stack (below glibc's 2 MiB default when the stack limit is unlimited):
# the kernels keep their activation tiles on the stack, and a build that kept four fixed-size tiles there
# (1.6-1.8 MB) crashed here.
SMALL_STACK_RUN = """
import sys, threading, numpy as np
from gateway import _native
e = _native.Engine(sys.argv[1], n_sink=4, n_ring=32, n_scratch=24, kv_policy="sink_ring", act_precision="q8x2",
                   n_threads=2)
toks = np.random.default_rng(1).integers(0, int(sys.argv[2]), 20).astype(np.int32)
ref = np.empty((20, e.n_vocab), np.float32); e.forward_scratch(toks, ref, True); e.rollback(0)
out = np.empty_like(ref)
threading.stack_size(1 << 20)
t = threading.Thread(target=lambda: e.forward_scratch(toks, out, True)); t.start(); t.join()
print("same" if np.array_equal(out.view(np.uint32), ref.view(np.uint32)) else "differ")
"""


def test_prefill_fits_a_small_thread_stack(tiny_path):
    run = subprocess.run([sys.executable, "-c", SMALL_STACK_RUN, str(tiny_path), str(random_gguf.TINY_VOCAB)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "same", (run.returncode, run.stdout, run.stderr[-2000:])


def test_errors_name_the_limit(tiny_path):
    with pytest.raises(ValueError, match="context_length"):
        make(tiny_path, n_ring=random_gguf.TINY_CTX)        # 4 + 512 + 24 > 512
    with pytest.raises(ValueError, match="policy"):
        make(tiny_path, kv_policy="lru")
    e = make(tiny_path)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        e.forward_scratch(np.array([0, random_gguf.TINY_VOCAB], np.int32))
    with pytest.raises(ValueError, match="scratch"):
        e.forward_scratch(tokens(25))
    assert e.scratch_used == 0                           # refused inputs change nothing
    e.forward_scratch(tokens(2))
    e.prefill_stream(tokens(2))                           # the stream is read while a job holds scratch
    assert e.scratch_used == 2                            # (tests/native/test_read_during_job.py)
    with pytest.raises(ValueError, match="rollback"):
        e.rollback(3)
    with pytest.raises(ValueError, match="expected"):
        e.forward_scratch(tokens(2), np.empty(3, np.float32))
    with pytest.raises(_native.GGUFError, match="not-a-file"):
        _native.Engine("/nonexistent/not-a-file.gguf", n_sink=4, n_ring=32, n_scratch=24, kv_policy="sink_ring",
                       act_precision="q8x2")


def test_positions_stay_inside_the_cache_over_a_long_stream(tiny_path):
    # 20x the capacity through a tiny cache: logits stay finite and the job still works.
    e = make(tiny_path, n_sink=4, n_ring=16, n_scratch=8, max_chunk=16)
    out = np.empty(e.n_vocab, np.float32)
    e.prefill_stream(tokens(20 * e.capacity, seed=15), out)
    assert np.isfinite(out).all()
    assert np.isfinite(scratch_logits(e, tokens(8, seed=16))).all()


def test_packed_weights_give_the_same_logits(tiny_path, monkeypatch):
    """LINEGATE_PACK_WEIGHTS=1 packs the Q8_0 matrices at load (on x86 they then run through the GGUF kernels on
    each group unpacked, on aarch64 through the packed NEON kernels): prefill, batched and stepped logits are
    the bits of the unpacked engine's."""
    monkeypatch.setenv("LINEGATE_PACK_WEIGHTS", "0")
    plain = make(tiny_path)
    monkeypatch.setenv("LINEGATE_PACK_WEIGHTS", "1")
    packed = make(tiny_path)
    assert plain.packed_matrices == 0 and packed.packed_matrices >= 8   # attn_q, attn_v, ffn_gate, ffn_down x 2 layers
    outs = []
    for e in (plain, packed):
        e.prefill_stream(tokens(40, seed=5))
        toks = tokens(5, seed=6)
        outs.append((scratch_logits(e, toks), e.rollback(0), decode_logits(e, toks)))
    assert np.array_equal(outs[0][0], outs[1][0]) and np.array_equal(outs[0][2], outs[1][2])

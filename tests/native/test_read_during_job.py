"""Reading the stream while a job holds scratch (native/kv_cache.h, READING DURING A JOB; issue 42
part 3): the job keeps the view it forked from. While the ring evicts none of it, the job's logits are
bit-identical to a run without the interleaved stream chunks; the stream itself is what prefilling the
same chunks after the job gives, and the next job sees the same cache."""

from __future__ import annotations

import numpy as np
import pytest

from gateway.llm.engine import Engine
from gateway.settings import BARE_ENGINE

N_RING, N_SCRATCH, BLOCK = 256, 96, 16


def make(path, policy: str) -> Engine:
    extra = {"kv_block": BLOCK} if policy in ("novelty", "semantic") else {}
    return Engine(path, n_sink=4, n_ring=N_RING, n_scratch=N_SCRATCH, n_threads=2, kv_policy=policy,
                  act_precision=BARE_ENGINE.act_precision, **extra)


def tokens(rng: np.random.Generator, n: int) -> list[int]:
    return rng.integers(100, 20000, n).tolist()


def run_job(e: Engine, prompt: list[int], chunks: list[list[int]] | None,
            n_decode: int = 10) -> tuple[list[np.ndarray], int]:
    """Prompt in two parts, then greedy decode; the next stream chunk after each step while `chunks`
    has one. -> (every step's logits, the view tokens the job lost); scratch rolled back."""
    todo = list(chunks or [])

    def read() -> None:
        if todo:
            e.prefill_stream(todo.pop(0))

    half = len(prompt) // 2
    out = [e.forward_scratch(prompt[:half])]
    read()
    out.append(e.forward_scratch(prompt[half:]))
    read()
    tok = int(np.argmax(out[-1]))
    for _ in range(n_decode):
        out.append(e.forward_scratch([tok]))
        tok = int(np.argmax(out[-1]))
        read()
    lost = e.job_view_lost
    e.rollback(0)
    assert e.job_view_lost == 0
    return out, lost


@pytest.mark.parametrize("policy", ["sink_ring", "novelty", "semantic", "fifo"])
def test_a_job_is_bit_identical_with_stream_chunks_read_during_it(smollm_path, policy):
    rng = np.random.default_rng(1)
    base, prompt, chunks = tokens(rng, 60), tokens(rng, 30), [tokens(rng, 8) for _ in range(12)]
    ref, inter = make(smollm_path, policy), make(smollm_path, policy)
    assert inter.reads_during_jobs
    for e in (ref, inter):
        e.prefill_stream(base)
    want, _ = run_job(ref, prompt, None)
    for c in chunks:                      # the reference reads the same chunks after the job
        ref.prefill_stream(c)
    got, lost = run_job(inter, prompt, chunks)
    assert lost == 0                      # 60 + 96 tokens fit the ring: nothing the job sees is evicted
    assert len(got) == len(want) and all(np.array_equal(a, b) for a, b in zip(want, got))
    assert inter.stream_total == ref.stream_total and inter.stream_checksum() == ref.stream_checksum()
    nxt = tokens(rng, 12)
    assert np.array_equal(ref.forward_scratch(nxt, all_logits=True), inter.forward_scratch(nxt, all_logits=True))


@pytest.mark.parametrize("policy", ["sink_ring", "novelty"])
def test_the_ring_evicting_a_jobs_view_leaves_the_stream_exact(smollm_path, policy):
    """Ring full: every chunk read during the job evicts entries of its view. The job loses them (counted),
    stays finite, and the stream is still exactly what reading the chunks after the job gives."""
    rng = np.random.default_rng(2)
    base, prompt, chunks = tokens(rng, 300), tokens(rng, 30), [tokens(rng, 8) for _ in range(12)]
    ref, inter = make(smollm_path, policy), make(smollm_path, policy)
    for e in (ref, inter):
        e.prefill_stream(base)
    want, _ = run_job(ref, prompt, None)
    for c in chunks:
        ref.prefill_stream(c)
    got, lost = run_job(inter, prompt, chunks)
    assert lost == 96                     # 12 chunks of 8: the oldest 96 (6 whole blocks under novelty)
    assert all(np.isfinite(g).all() for g in got)
    assert np.array_equal(want[0], got[0])   # before the first chunk: the same
    assert inter.stream_checksum() == ref.stream_checksum()
    nxt = tokens(rng, 12)
    assert np.array_equal(ref.forward_scratch(nxt, all_logits=True), inter.forward_scratch(nxt, all_logits=True))


def test_novelty_compaction_during_a_job_moves_its_scratch_with_its_context(smollm_path):
    """Novelty with the oldest blocks important: the block evicted sits in the ring's newer half, so the
    newer side (the job's newest context) is re-rotated back by one block, and the job's scratch keys with
    it. The stream stays exact; the evictions are the reference's, and the scratch keys were moved."""
    rng = np.random.default_rng(3)
    base, prompt, chunks = tokens(rng, 300), tokens(rng, 30), [tokens(rng, 16) for _ in range(6)]
    ref, inter = make(smollm_path, "novelty"), make(smollm_path, "novelty")
    for e in (ref, inter):
        e.set_stream_importance(1.0)      # the first ~3/4 of the ring important
        e.prefill_stream(base[:180])
        e.set_stream_importance(0.0)
        e.prefill_stream(base[180:])
    run_job(ref, prompt, None)
    for c in chunks:
        ref.prefill_stream(c)
    got, lost = run_job(inter, prompt, chunks)
    assert lost > 0 and all(np.isfinite(g).all() for g in got)
    assert inter.stream_checksum() == ref.stream_checksum()
    r, i = ref.native.evict_stats, inter.native.evict_stats
    assert (r["evicted_oldest"], r["evicted_important"]) == (i["evicted_oldest"], i["evicted_important"])
    assert i["shifted_keys"] > r["shifted_keys"]     # the job's scratch moved with its context


def test_a_job_that_rolls_back_to_empty_forks_again_from_the_stream_now(smollm_path):
    """rollback(0) ends the job's view: the next scratch write sees every chunk read meanwhile."""
    rng = np.random.default_rng(4)
    base, chunk, q = tokens(rng, 40), tokens(rng, 8), tokens(rng, 6)
    a, b = make(smollm_path, "sink_ring"), make(smollm_path, "sink_ring")
    for e in (a, b):
        e.prefill_stream(base)
    b.forward_scratch(q)
    b.prefill_stream(chunk)
    b.rollback(0)
    a.prefill_stream(chunk)
    assert np.array_equal(a.forward_scratch(q), b.forward_scratch(q))


def test_evictions_outside_the_jobs_view_leave_it_exact(smollm_path):
    """Novelty with the whole view important (within the kept share): the blocks the ring evicts during the
    job are ones written during it, the view and the job's scratch stay where they were, and the job is
    still bit-identical to the run without the interleaved chunks."""
    rng = np.random.default_rng(5)
    base, prompt, chunks = tokens(rng, 180), tokens(rng, 30), [tokens(rng, 16) for _ in range(6)]
    ref, inter = make(smollm_path, "novelty"), make(smollm_path, "novelty")
    for e in (ref, inter):
        e.set_stream_importance(1.0)      # 11.25 of the ring's 16 blocks: under 3/4, all kept
        e.prefill_stream(base)
        e.set_stream_importance(0.0)
    want, _ = run_job(ref, prompt, None)
    for c in chunks:
        ref.prefill_stream(c)
    got, lost = run_job(inter, prompt, chunks)
    assert inter.native.evict_stats["evicted_oldest"] > 0 and lost == 0
    assert all(np.array_equal(a, b) for a, b in zip(want, got))
    assert inter.stream_checksum() == ref.stream_checksum()

"""A job that does not see the stream (native/kv_cache.h, A JOB WITHOUT THE STREAM): its logits do not
depend on what the ring holds, bit for bit, and match (to fp32 rounding of other rotation angles) a job
on an engine whose stream is the sink alone; the ring may evict anything while it runs; a job started
after it sees the ring again once the flag is back."""

from __future__ import annotations

import numpy as np
import pytest

from tests.native.test_read_during_job import make, run_job, tokens


@pytest.mark.parametrize("policy", ["sink_ring", "novelty"])
def test_a_job_without_the_stream_ignores_the_ring(smollm_path, policy):
    rng = np.random.default_rng(7)
    sink, prompt = tokens(rng, 4), tokens(rng, 30)
    ring_a, ring_b = tokens(rng, 200), tokens(rng, 200)    # same length: same rotation indices
    a, b, bare = make(smollm_path, policy), make(smollm_path, policy), make(smollm_path, policy)
    for e, ring in ((a, ring_a), (b, ring_b), (bare, [])):
        e.prefill_stream(sink + ring)
        assert e.job_sees_stream
    a.job_sees_stream = b.job_sees_stream = False
    out_a, lost_a = run_job(a, prompt, [tokens(rng, 16) for _ in range(20)])   # the ring wraps meanwhile
    out_b, _ = run_job(b, prompt, None)
    assert lost_a == 0
    for x, y in zip(out_a, out_b):
        assert np.array_equal(x, y)
    # the sink-only engine's job: the same distances, keys rotated by other angles
    out_bare, _ = run_job(bare, prompt, None)
    for x, y in zip(out_a, out_bare):
        assert int(np.argmax(x)) == int(np.argmax(y))
        assert np.max(np.abs(x - y)) < 1e-3 * max(1.0, float(np.max(np.abs(y))))
    # with the flag back, a job sees the ring: b against an engine holding ring_a (the same rotation indices)
    b.job_sees_stream = True
    c = make(smollm_path, policy)
    c.prefill_stream(sink + ring_a)
    seen_b, _ = run_job(b, prompt, None, n_decode=0)
    seen_c, _ = run_job(c, prompt, None, n_decode=0)
    assert not np.array_equal(seen_b[-1], seen_c[-1])

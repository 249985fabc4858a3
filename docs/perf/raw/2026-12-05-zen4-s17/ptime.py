"""Time the parts of one answer on the appliance's layout: sinks 876, ring full (2048), then a 160-token
call prompt, 20 decode steps, a 360-token answer prompt, 40 decode steps."""
import sys, time, glob, os
sys.path.insert(0, '.')  # run from the checkout
import numpy as np
from gateway.llm.engine import Engine
model = glob.glob(os.path.expanduser('~/.cache/linegate/models/qwen2.5-coder-1.5b*.gguf'))[0]
prec = sys.argv[1] if len(sys.argv) > 1 else "auto"
e = Engine(model, n_sink=876, n_ring=2048, n_scratch=1024, kv_policy="novelty", kv_block=16, act_precision=prec)
rng = np.random.default_rng(0)
toks = lambda n: [int(x) for x in rng.integers(100, 30000, n)]
t = time.perf_counter(); e.prefill_stream(toks(876)); print("sink 876", round(time.perf_counter() - t, 2))
t = time.perf_counter(); e.prefill_stream(toks(2100)); print("ring 2100", round(time.perf_counter() - t, 2), "stream_len", e.stream_len)


def prefill(n):      # a prompt of n tokens in 64-token chunks (query_job's PREFILL_CHECK_TOKENS)
    t = time.perf_counter()
    for i in range(0, n, 64): e.forward_scratch(toks(min(64, n - i)))
    return time.perf_counter() - t


def decode(n):       # n single steps
    t = time.perf_counter()
    for _ in range(n): e.forward_scratch(toks(1))
    return time.perf_counter() - t


for rep in range(2):
    base = e.scratch_len
    a, b, c, d = prefill(160), decode(20), prefill(360), decode(40)
    e.rollback(base)
    print(f"call prefill 160: {a:.2f}s ({160/a:.0f} tok/s)  call decode 20: {b:.2f}s  answer prefill 360: {c:.2f}s ({360/c:.0f} tok/s)  answer decode 40: {d:.2f}s  total {a+b+c+d:.2f}")

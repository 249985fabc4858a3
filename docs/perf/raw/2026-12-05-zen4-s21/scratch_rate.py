"""Per-chunk forward_scratch time against the scratch position, ring full (2,048 stream tokens)."""
import sys, time, glob, os
sys.meta_path[:] = [f for f in sys.meta_path if 'ScikitBuild' not in type(f).__name__]
sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else '.')   # a tree with the built _native
from gateway.llm.engine import Engine
import numpy as np
model = glob.glob(os.path.expanduser('~/.cache/linegate/models/qwen2.5-coder-1.5b*.gguf'))[0]
e = Engine(model, n_sink=64, n_ring=2048, n_scratch=1024, n_threads=2, kv_policy="novelty", kv_block=16, act_precision="auto")
rng = np.random.default_rng(0)
toks = lambda n: [int(x) for x in rng.integers(1000, 30000, n)]
e.prefill_stream(toks(64))
for _ in range(8):
    e.prefill_stream(toks(256))
print("stream", e.stream_len)
for rep in range(2):
    e.rollback(0)
    out = []
    for i in range(10):
        t0 = time.perf_counter(); e.forward_scratch(toks(64)); out.append((time.perf_counter() - t0) * 1000 / 64)
    print("ms/tok by chunk (scratch pos 0..640):", [round(x, 2) for x in out])
e.rollback(0)
t0 = time.perf_counter(); e.forward_scratch(toks(512)); print("one 512 call: %.2f ms/tok" % ((time.perf_counter() - t0) * 1000 / 512))

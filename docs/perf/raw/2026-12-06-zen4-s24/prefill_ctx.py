"""prefill_ctx.py: a 600-token prompt's prefill in 64-token chunks (as a query job does) with the stream
empty and with the ring full (2048 tokens), q8 activations, 2 threads: where the appliance's ~100 tok/s goes."""
import time
import numpy as np
import tree  # noqa: F401,E402  (TREE's gateway/ first: tree.py)
from gateway.llm.engine import Engine
from gateway.llm.models import resolve_model
m = resolve_model("qwen2.5-coder-1.5b-instruct")
eng = Engine(m, n_sink=64, n_ring=2048, n_scratch=1024, n_threads=2, act_precision="q8", kv_policy="sink_ring")
e = eng.native
rng = np.random.default_rng(0)
toks = rng.integers(100, 30000, 4000).astype(np.int32)
out = np.empty(e.n_vocab, np.float32)
def job(n=600, chunk=64):
    t = time.perf_counter()
    for i in range(0, n, chunk):
        e.forward_scratch(toks[3000 + i:3000 + min(n, i + chunk)], out)
    s = time.perf_counter() - t
    e.rollback(0)
    return n / s
e.forward_scratch(toks[:64], out); e.rollback(0)
print("empty stream: chunk64", [round(job()) for _ in range(3)], "one call", [round(job(chunk=600)) for _ in range(2)])
eng.prefill_stream(toks[:64])
for i in range(64, 2200, 256):
    eng.prefill_stream(toks[i:i + 256])
print("ring full: chunk64", [round(job()) for _ in range(3)], "one call", [round(job(chunk=600)) for _ in range(2)])

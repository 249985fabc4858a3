"""1.5B, 2 threads, in one process: ms per one-token forward as a decode loop (positions advancing,
argmax between) and as verify-k1 steps (forward at position 32, rollback), alternating, static then the
plan in argv[1] (if given)."""
import os, sys, time, json
import numpy as np
sys.path.insert(0, "../wt-zen4")
from gateway.llm.engine import Engine
from gateway.llm import kernel_plan
from tools.bench.bench_engine import loghub_tokens
from gateway.llm.tokenizer import Tokenizer
model = os.path.expanduser("~/.cache/linegate/models/qwen2.5-coder-1.5b-instruct.gguf")
tok = Tokenizer.from_gguf(model)
toks = np.asarray(loghub_tokens(tok, 256), np.int32)
eng = Engine(model, n_sink=4, n_ring=3580, n_scratch=512, n_threads=2)
e = eng.native
out = np.empty(e.n_vocab, np.float32)
one = np.zeros(1, np.int32)
e.forward_scratch(toks[:64], out); e.rollback(0)
def decode(n):
    e.rollback(0); e.forward_scratch(toks[:32], out)
    t = time.perf_counter()
    for _ in range(n):
        one[0] = int(np.argmax(out)); e.forward_scratch(one, out)
    return (time.perf_counter() - t) / n * 1e3
def verify(n):
    e.rollback(0); e.forward_scratch(toks[:32], out)
    x = toks[32:33].copy(); o = np.empty((1, e.n_vocab), np.float32)
    ts = []
    for _ in range(n):
        t = time.perf_counter(); e.forward_scratch(x, o, True); e.rollback(32); ts.append(time.perf_counter() - t)
    return float(np.median(ts)) * 1e3, float(np.mean(ts)) * 1e3
plans = ["static"] + ([sys.argv[1]] if len(sys.argv) > 1 else [])
for rnd in range(3):
    for p in plans:
        if p == "static": kernel_plan.reset()
        else: kernel_plan.load(p)
        d = decode(32); v = verify(32)
        print(f"round {rnd} {p[:20]:20s} decode {d:6.1f} ms/token  verify-k1 median {v[0]:6.1f} mean {v[1]:6.1f}", flush=True)

"""Two builds of the native engine side by side: decode and prefill of the same model, each build in
its own process (its own venv's python), timed rounds alternating between them so that both meet
the host's drift alike. For "no slower than before" checks of a change (the peer is the build
before it); tools/bench/bench_engine.py measures against llama.cpp.

    .venv/bin/python tools/bench/bench_ab.py --a /path/to/old/.venv/bin/python --b .venv/bin/python \
        [--model qwen2.5-coder-1.5b-instruct] [--rounds 8] [--threads 2]

Each worker resolves the model through its own gateway (old or new layout). Last line: one JSON
object with per-build medians and the b/a ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))   # the tools package, run as a file
from tools.bench.harness import cpu_here, print_result  # noqa: E402

WORKER = r"""
import json, sys, time, os
import numpy as np
from gateway import _native
model, threads = sys.argv[1], int(sys.argv[2])
path = os.path.join(os.path.expanduser("~/.cache/linegate/models"), model + ".gguf")
kv = dict(n_sink=4, n_ring=2048, n_scratch=600, act_precision="q8x2", n_threads=threads)
try:
    e = _native.Engine(path, kv_policy="sink_ring", **kv)
except TypeError:   # a build from before the bindings took kv_policy (issue 44) names it policy
    e = _native.Engine(path, policy="sink_ring", **kv)
rng = np.random.default_rng(0)
stream = rng.integers(100, 20000, 256).astype(np.int32)
e.prefill_stream(stream)
one = np.zeros(1, np.int32)
logits = np.zeros(e.n_vocab, np.float32)
print(json.dumps({"ready": True, "simd": e.simd}), flush=True)
for line in sys.stdin:
    kind = line.strip()
    if kind == "decode":          # 32 one-token steps in scratch
        t0 = time.perf_counter()
        for i in range(32):
            one[0] = 100 + i
            e.forward_scratch(one, logits)
        dt = time.perf_counter() - t0
        e.rollback(0)
        print(json.dumps({"tok_s": 32 / dt}), flush=True)
    elif kind == "prefill":       # one 512-token chunk in scratch
        toks = rng.integers(100, 20000, 512).astype(np.int32)
        t0 = time.perf_counter()
        e.forward_scratch(toks, logits)
        dt = time.perf_counter() - t0
        e.rollback(0)
        print(json.dumps({"tok_s": 512 / dt}), flush=True)
"""


class Worker:
    def __init__(self, python: str, model: str, threads: int):
        env = dict(os.environ, PYTHONPATH="")
        self.p = subprocess.Popen([os.path.abspath(python), "-c", WORKER, model, str(threads)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=env, cwd="/")
        self.info = self.read()

    def read(self) -> dict:
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(f"worker exited ({self.p.wait()})")
        return json.loads(line)

    def ask(self, kind: str) -> float:
        self.p.stdin.write(kind + "\n")
        self.p.stdin.flush()
        return self.read()["tok_s"]

    def close(self) -> None:
        self.p.stdin.close()
        self.p.wait(timeout=30)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", required=True, help="python of the build before (its venv)")
    ap.add_argument("--b", default=sys.executable, help="python of the build after")
    ap.add_argument("--model", default="qwen2.5-coder-1.5b-instruct")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    workers = {"a": Worker(args.a, args.model, args.threads), "b": Worker(args.b, args.model, args.threads)}
    runs: dict[str, dict[str, list[float]]] = {k: {"decode": [], "prefill": []} for k in workers}
    for r in range(args.rounds):
        order = ("a", "b") if r % 2 == 0 else ("b", "a")
        for kind in ("decode", "prefill"):
            for k in order:
                runs[k][kind].append(workers[k].ask(kind))
        print(f"round {r}: " + ", ".join(f"{k} {kind} {runs[k][kind][-1]:.2f}" for k in workers
                                         for kind in ("decode", "prefill")), flush=True)
    for w in workers.values():
        w.close()
    med = {k: {kind: statistics.median(v) for kind, v in runs[k].items()} for k in runs}
    spread = {k: {kind: (min(v), max(v)) for kind, v in runs[k].items()} for k in runs}
    out = {"model": args.model, "threads": args.threads, "rounds": args.rounds, "cpu": cpu_here(),
           "simd": {k: w.info["simd"] for k, w in workers.items()},
           "a": med["a"], "b": med["b"], "range": spread,
           "ratio_decode": med["b"]["decode"] / med["a"]["decode"],
           "ratio_prefill": med["b"]["prefill"] / med["a"]["prefill"]}
    print_result(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Constant over days (issue 26): a long stream through one engine per KV policy; every --sample
tokens: the process RSS, the engine's heap allocations since the warm-up (the allocation counter:
must stay 0), the prefill ms/token of the interval, and a decode probe (64 one-token forwards in
scratch, rolled back). Reports drift of RSS and speed, last to first samples after the warm-up. The
box is shared, so speed is also measured on a reference engine in the same state-size regime that
streamed only the warm-up (same geometry and policy), timed right after each sample: the drift of
the ratio main / reference is the engine's own, the load's drift cancels.

1M tokens of a day at the demo line's rate do not fit a 2-core box in minutes with a real model, so
the default is compressed: a random-weight GGUF (tools/convert/random_gguf.py, qwen2 layout, 2 layers)
with the appliance's cache geometry; --model runs a real one (fewer --tokens). Last line: one JSON object.
  .venv/bin/python tools/bench/bench_kv_constancy.py --tokens 1000000
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from gateway import _native  # noqa: E402
from tools.bench.harness import cpu_here, print_result, rss_mb  # noqa: E402
from tools.convert import random_gguf  # noqa: E402

PROBE_TOKENS = 64
REF_CHUNKS = 16        # reference prefill calls per sample
NOVEL_SHARE = 0.04     # novelty: share of 32-token lines marked important (the eval's stream: ~0.036)


def probe_ms(e, one, out, vocab: int, pos: int) -> float:
    t0 = time.perf_counter()
    for i in range(PROBE_TOKENS):
        one[0] = (31 * i + pos) % vocab
        e.forward_scratch(one, out)
    e.rollback(0)
    return (time.perf_counter() - t0) * 1000 / PROBE_TOKENS


def ratio(samples: list[dict], a: str, b: str) -> float:
    return float(np.median([s[a] / s[b] for s in samples]))


def run(path: str, policy: str, args, vocab: int) -> dict:
    kw = {"kv_block": 32} if policy in ("semantic", "novelty") else {}
    e = _native.Engine(path, n_sink=args.n_sink, n_ring=args.n_ring, n_scratch=64, kv_policy=policy,
                       act_precision="q8x2", n_threads=args.threads, **kw)
    ref = _native.Engine(path, n_sink=args.n_sink, n_ring=args.n_ring, n_scratch=64, kv_policy=policy,
                         act_precision="q8x2", n_threads=args.threads, **kw)
    rng = np.random.default_rng(1)
    ref.prefill_stream(rng.integers(0, vocab, args.n_sink + 2 * args.n_ring).astype(np.int32))
    out = np.empty(e.n_vocab, np.float32)
    one = np.zeros(1, np.int32)
    samples, pos, allocs0 = [], 0, None
    t_int, n_int = 0.0, 0
    while pos < args.tokens:
        toks = rng.integers(0, vocab, args.chunk).astype(np.int32)
        if policy == "novelty":
            e.set_stream_importance(1.0 if rng.random() < NOVEL_SHARE else 0.0)
        t0 = time.perf_counter()
        e.prefill_stream(toks, out)
        t_int += time.perf_counter() - t0
        n_int += toks.size
        pos += toks.size
        if pos % args.sample < args.chunk or pos >= args.tokens:
            decode_ms = probe_ms(e, one, out, vocab, pos)
            ref_decode_ms = probe_ms(ref, one, out, vocab, pos)
            t0 = time.perf_counter()
            for _ in range(REF_CHUNKS):
                ref.prefill_stream(rng.integers(0, vocab, args.chunk).astype(np.int32), out)
            ref_prefill = (time.perf_counter() - t0) * 1000 / (REF_CHUNKS * args.chunk)
            if allocs0 is None and pos >= args.warmup:
                allocs0 = e.call_allocs
            samples.append({"tokens": pos, "rss_mb": round(rss_mb(), 2), "prefill_ms_tok": round(t_int * 1000 / n_int, 4),
                            "decode_ms_tok": round(decode_ms, 3), "ref_decode_ms_tok": round(ref_decode_ms, 3),
                            "ref_prefill_ms_tok": round(ref_prefill, 4),
                            "allocs_since_warmup": None if allocs0 is None else e.call_allocs - allocs0})
            t_int, n_int = 0.0, 0
    warm = [s for s in samples if s["allocs_since_warmup"] is not None]
    first, last = warm[0], warm[-1]
    med = lambda k, part: float(np.median([s[k] for s in part]))  # noqa: E731
    q = max(1, len(warm) // 4)
    return {"policy": policy, "samples": samples, "stream_total": e.stream_total,
            "rss_drift": round((last["rss_mb"] - first["rss_mb"]) / first["rss_mb"], 5),
            "allocs_after_warmup": last["allocs_since_warmup"],
            # speed: median of the last quarter of samples over the first quarter's (after warm-up)
            "prefill_ms_drift": round(med("prefill_ms_tok", warm[-q:]) / med("prefill_ms_tok", warm[:q]) - 1, 4),
            "decode_ms_drift": round(med("decode_ms_tok", warm[-q:]) / med("decode_ms_tok", warm[:q]) - 1, 4),
            "load_drift_ref_decode": round(med("ref_decode_ms_tok", warm[-q:]) / med("ref_decode_ms_tok", warm[:q]) - 1, 4),
            # the engine's own: main / reference, timed back to back
            "prefill_ms_drift_vs_ref": round(ratio(warm[-q:], "prefill_ms_tok", "ref_prefill_ms_tok")
                                             / ratio(warm[:q], "prefill_ms_tok", "ref_prefill_ms_tok") - 1, 4),
            "decode_ms_drift_vs_ref": round(ratio(warm[-q:], "decode_ms_tok", "ref_decode_ms_tok")
                                            / ratio(warm[:q], "decode_ms_tok", "ref_decode_ms_tok") - 1, 4),
            "evict": e.evict_stats}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=None, help="a GGUF path (default: a random-weight qwen2 GGUF)")
    ap.add_argument("--tokens", type=int, default=1_000_000)
    ap.add_argument("--policies", default="sink_ring,novelty,semantic")
    ap.add_argument("--n-sink", type=int, default=96)
    ap.add_argument("--n-ring", type=int, default=1024)
    ap.add_argument("--chunk", type=int, default=32, help="stream tokens per call (settings.engine.prefill_chunk)")
    ap.add_argument("--sample", type=int, default=50_000)
    ap.add_argument("--warmup", type=int, default=50_000)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path, vocab = args.model, None
        if path is None:
            path = str(random_gguf.write_tiny(Path(tmp) / "tiny.gguf", "qwen2", n_ctx=4096))
            vocab = random_gguf.TINY_VOCAB
        res = []
        for pol in args.policies.split(","):
            t0 = time.time()
            r = run(path, pol, args, vocab or _native.Engine(path, n_sink=4, n_ring=64, n_scratch=8, kv_policy="sink_ring",
                                                                   act_precision="q8x2").n_vocab)
            r["seconds"] = round(time.time() - t0, 1)
            print(json.dumps({k: v for k, v in r.items() if k != "samples"}), flush=True)
            res.append(r)
    print_result({"model": args.model or "random-weight qwen2 (2 layers)", "tokens": args.tokens,
                  "n_sink": args.n_sink, "n_ring": args.n_ring, "cpu": cpu_here(),
                  "results": [{k: v for k, v in r.items() if k != "samples"} for r in res],
                  "samples": {r["policy"]: r["samples"] for r in res}})


if __name__ == "__main__":
    main()

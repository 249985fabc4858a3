"""A cost model of the RK3588 box on paper: target decode on the 4 x Cortex-A76, the draft on the NPU, and
the speculative speedup each drafter implies there. Nothing here runs on an RK3588; every input is named
with its source (INPUTS), and each output says whether it is measured elsewhere or modelled here.

- Target (Qwen2.5-Coder-1.5B, Q4_K_M) decode and verify cost: bench_arm.py's roofline, per weight matrix
  max(bytes / bandwidth, cycles / (cores x clock)), with our kernels' cycles per block from
  docs/perf/2026-12-02-arm-kernels.md (llvm-mca, Neoverse N1 model) and bench_arm's board constants; plus
  the fp16 K/V the attention reads at the bench's context length.
- Draft on the NPU: RKLLM's published RK3588 decode rates (airockchip/rknn-llm benchmark.md), and the
  DRAM traffic they imply, since the NPU reads its weights over the same memory as the CPU.
- Drafters: per-position acceptance from bench_spec's measured tokens per target forward (greedy, same
  models, x86 host: acceptance is a property of the models and the text, not of the machine); the draft
  length chosen per scenario to maximise the modelled speed (the decode loop adapts it at run time).

    .venv/bin/python tools/bench/box_model.py [--bandwidth-gbs 22] [--context 3288] [--npu-top1 1.0]

Prints a table and, as its last line, one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tools.bench.bench_arm import (BANDWIDTH_GBS, BLOCK, CLOCK_GHZ, CORES, MODELS,  # noqa: E402
                                   forward_seconds, model_matrices)
from tools.bench.harness import print_result  # noqa: E402

# --- inputs, each with its source ------------------------------------------------------------

# Our kernels' cycles per block and row on the A76 (llvm-mca -mcpu=neoverse-n1), as plan.h routes a call:
# Q4_K one record through the row-lane kernel, more records through the reducing kernel (one decode per
# tile of up to R_TILE records, then a per-record cost); Q6_K always reducing.
# Source: docs/perf/2026-12-02-arm-kernels.md, tables "Kernels" and "The plan (plan.h)".
KERNEL_CYCLES = {"Q4_K": {"one": 46.03, "decode": 29.1, "record": 22.1},
                 "Q6_K": {"decode": 50.6, "record": 26.6}}
R_TILE = 8
# That doc's own predictions, which kernel_cost must reproduce (tests/tools/test_box_model.py).
DOC_PREDICTIONS = {"q8x2": {"decode_tok_s": 19.5, "verify_cost_k4": 2.71, "verify_cost_k8": 5.43},
                   "q8": {"decode_tok_s": 22.5, "verify_cost_k4": 1.81, "verify_cost_k8": 3.13}}
RECORDS_PER_TOKEN = {"q8x2": 2, "q8": 1}   # the engine's default activations are q8x2 (two int8 records)

# RKLLM on the RK3588 NPU, w8a8, seqlen 128, 64 new tokens, max CPU/NPU clocks.
# Source: github.com/airockchip/rknn-llm, benchmark.md (commit 878f936).
RKLLM = {"qwen2-0.5b": {"tok_s": 41.58, "ttft_ms_128": 145.90, "memory_mb": 669.56, "params": 494e6},
         "qwen2.5-1.5b": {"tok_s": 16.69, "ttft_ms_128": 378.31, "memory_mb": 1689.21, "params": 1.54e9}}

# Drafter acceptance and costs are read from a bench_spec log (tools/bench/bench_spec.py, 1.5B target,
# 0.5B draft, greedy); its run and CPU: docs/perf/2026-12-02-box-cost-model.md.
BENCH_SPEC_LOG = REPO / "docs/perf/raw/2026-11-30-amd-epyc/bench_spec_2bd4fb2.log"
# The n-gram look-up's cost per drafted token there, and the A76 slowdown bench_spec assumes for it.
NGRAM_SLOWDOWN = 3.0

# The seed design's claims (issue 4: target-only speedup on an RK3588; issue 3: the 1.5B's peak RSS with a
# 4096-token cache), beside our 1.5B's measured peak RSS; sources: docs/perf/2026-12-02-box-cost-model.md.
SEED_SPEEDUP, SEED_RSS_GB, TARGET_RSS_GB = 2.2, 1.25, 1.19

K_MAX = 12
GRAPH_CHUNK = 8     # tokens per run of the exported draft graph (export_draft_onnx.DEFAULT_CHUNK)


# --- target on the A76 -----------------------------------------------------------------------

def kernel_cost(t: str, n: int) -> float:
    """Our cycles per block and row for a call of n records (KERNEL_CYCLES, as plan.h routes it)."""
    k = KERNEL_CYCLES[t]
    if n == 1 and "one" in k:
        return k["one"]
    full, rest = divmod(n, R_TILE)
    return sum(k["decode"] + nt * k["record"] for nt in [R_TILE] * full + ([rest] if rest else []))


def kv_bytes_per_token(hp: dict) -> int:
    """fp16 K and V of one cached position (the native engine's cache layout)."""
    return hp["n_layer"] * 2 * hp["n_head_kv"] * hp["head_dim"] * 2


def gguf_hparams(name: str) -> dict:
    import gguf
    from gateway.llm.models import resolve_model
    r = gguf.GGUFReader(str(resolve_model(name)))
    f = {k: r.fields[k].contents() for k in r.fields if k.startswith("qwen2.")}
    return {"n_layer": int(f["qwen2.block_count"]), "n_head_kv": int(f["qwen2.attention.head_count_kv"]),
            "head_dim": int(f["qwen2.embedding_length"]) // int(f["qwen2.attention.head_count"])}


class Target:
    """Forward time of T tokens on the A76 cluster: the weight roofline plus the K/V read of the attention."""

    def __init__(self, mats: list, hp: dict, precision: str, bw_gbs: float, context: int):
        self.mats, self.hp, self.bw, self.context = mats, hp, bw_gbs, context
        self.per_token = RECORDS_PER_TOKEN[precision]
        self.weight_bytes = forward_seconds(mats, kernel_cost, 1, bw_gbs)[2]
        self.kv_bytes = kv_bytes_per_token(hp) * context

    def weights_s(self, t: int) -> float:
        return forward_seconds(self.mats, kernel_cost, t * self.per_token, self.bw)[0]

    def seconds(self, t: int) -> float:
        # the K/V is read once per forward whatever T (the attention of T queries shares the pass)
        return self.weights_s(t) + self.kv_bytes / (self.bw * 1e9)

    def no_overlap_s(self) -> float:
        return forward_seconds(self.mats, kernel_cost, self.per_token, self.bw)[1] + self.kv_bytes / (self.bw * 1e9)

    def bytes_per_forward(self) -> float:
        return self.weight_bytes + self.kv_bytes


# --- speculative decoding --------------------------------------------------------------------

def expected_tokens(alpha: float, k: int) -> float:
    """Tokens per target forward with k drafts, each accepted with probability alpha given the ones before
    (Leviathan et al. 2023): 1 + alpha + ... + alpha^k."""
    return sum(alpha ** i for i in range(k + 1))


def alpha_from(tau: float, k: float) -> float:
    """Per-position acceptance that gives tau tokens per forward at a mean draft length k (bisection)."""
    lo, hi = 0.0, 0.9999
    for _ in range(60):
        mid = (lo + hi) / 2
        acc = sum(mid ** i for i in range(1, int(k) + 1)) + (k - int(k)) * mid ** (int(k) + 1)
        lo, hi = (mid, hi) if 1 + acc < tau else (lo, mid)
    return (lo + hi) / 2


def draft_steps(k: int, alpha: float, mode: str) -> float:
    """Draft-model steps per block of k drafts: k in series; deferred (gateway/llm/drafters/deferred.py)
    drafts k + 1 ahead (its guess of the bonus token, then k), and redoes k after a miss."""
    if mode == "serial" or k == 0:
        return k
    return (k + 1) + (1 - alpha ** (k + 1)) * k


def block_seconds(target: Target, k: int, draft_s: float, mode: str, alpha: float,
                  draft_bytes: float = 0.0) -> float:
    """Seconds of one draft + verify block of k drafts.
    serial: draft then verify. deferred: while the target verifies block n the NPU drafts k + 1 tokens
    ahead; they serve block n+1 only if all k of block n and the guessed bonus token were right
    (probability alpha^(k+1)), else the drafter waits for them and drafts k more in series.
    shared: deferred, and the NPU's and the CPU's reads share one DRAM: a block takes at least its bytes
    (one target forward plus the draft steps) over the bandwidth."""
    verify = target.seconds(k + 1)
    if mode == "serial" or k == 0:
        return verify + k * draft_s
    miss = 1 - alpha ** (k + 1)
    overlapped = max(verify, (k + 1) * draft_s) + miss * k * draft_s
    if mode == "deferred":
        return overlapped
    assert mode == "shared", mode
    return max(overlapped, (target.bytes_per_forward() + draft_steps(k, alpha, mode) * draft_bytes) / (target.bw * 1e9))


def best_k(target: Target, alpha: float, draft_s: float, mode: str, draft_bytes: float = 0.0) -> dict:
    t1 = target.seconds(1)
    rows = []
    for k in range(0, K_MAX + 1):
        tau = expected_tokens(alpha, k)
        rows.append({"k": k, "tokens_per_forward": tau,
                     "speedup": tau * t1 / block_seconds(target, k, draft_s, mode, alpha, draft_bytes)})
    return max(rows, key=lambda r: r["speedup"])


def measured_drafters(path: Path = BENCH_SPEC_LOG) -> dict:
    """{drafter: (tokens per target forward, drafts per forward, draft ms per token)} from bench_spec's JSON."""
    last = [ln for ln in path.read_text().splitlines() if ln.startswith("{")][-1]
    cm = json.loads(last)["cost_model"]
    return {k: (v["tokens_per_forward"], v["drafts_per_forward"], v["draft_ms_per_token_here"]) for k, v in cm.items()}


# --- the box ---------------------------------------------------------------------------------

def run(bw_gbs: float = BANDWIDTH_GBS[1], context: int = 3288, npu_top1: float = 1.0,
        rknn_bytes: float | None = None, graph_kv_bytes: float = 0.0) -> dict:
    mats = model_matrices(MODELS["1.5b"])
    hp = gguf_hparams(MODELS["1.5b"])
    meas = measured_drafters()
    out: dict = {"inputs": {"bandwidth_gbs": bw_gbs, "cores": CORES, "clock_ghz": CLOCK_GHZ, "context": context,
                            "kernel_cycles": KERNEL_CYCLES, "rkllm": RKLLM, "bench_spec": str(BENCH_SPEC_LOG.relative_to(REPO)),
                            "npu_top1": npu_top1, "ngram_slowdown": NGRAM_SLOWDOWN}}
    # the draft on the NPU: RKLLM's rate; its DRAM traffic per step = the w8a8 weights (1 byte a parameter)
    q05 = RKLLM["qwen2-0.5b"]
    npu_s = 1.0 / q05["tok_s"]
    rkllm_bytes = q05["params"]
    out["npu"] = {"draft_ms_per_token": round(npu_s * 1e3, 2),
                  "implied_read_gbs_0.5b": round(rkllm_bytes * q05["tok_s"] / 1e9, 1),
                  "implied_read_gbs_1.5b": round(RKLLM["qwen2.5-1.5b"]["params"] * RKLLM["qwen2.5-1.5b"]["tok_s"] / 1e9, 1),
                  "stream_prefill_tok_s": round(128 / (q05["ttft_ms_128"] / 1e3), 1)}
    # our graph: the .rknn's weights plus the K/V it takes in each step. graph_kv_bytes is the host's fp32
    # K/V fed per step (from the graph's input shapes); the runtime reads it, writes it converted to fp16,
    # and the NPU reads that: twice its size in DRAM traffic.
    our_step_bytes = (rknn_bytes or rkllm_bytes) + 2 * graph_kv_bytes
    out["npu"]["our_graph_bytes_per_step"] = round(our_step_bytes / 1e6, 1)
    # the NPU at RKLLM's effective read rate moving our graph's bytes
    our_npu_s = our_step_bytes / (rkllm_bytes * q05["tok_s"])
    out["npu"]["our_graph_ms_per_token_at_rkllm_bandwidth"] = round(our_npu_s * 1e3, 2)
    # reading along the stream: one graph run a chunk of GRAPH_CHUNK tokens, memory-bound like a draft step
    out["npu"]["our_graph_stream_tok_s"] = round(GRAPH_CHUNK / our_npu_s, 1)

    tau_n, d_n, ms_n = meas["ngram"]
    alpha_model = alpha_from(*meas["model:native"][:2])
    alpha_deferred = alpha_from(*meas["model:native+deferred"][:2])
    alpha_npu = alpha_model * npu_top1
    out["acceptance"] = {"ngram_tokens_per_forward": tau_n, "ngram_drafts_per_forward": d_n,
                         "model_alpha": round(alpha_model, 3), "model_alpha_from_deferred_run": round(alpha_deferred, 3),
                         "npu_alpha": round(alpha_npu, 3)}
    out["targets"] = {}
    for prec in ("q8x2", "q8"):
        tg = Target(mats, hp, prec, bw_gbs, context)
        t1 = tg.seconds(1)
        curve = {t: round(tg.seconds(t) / t1, 3) for t in (1, 2, 3, 4, 5, 8, 9, 13)}
        ceiling = max((t / (tg.seconds(t) / t1), t) for t in range(1, K_MAX + 2))
        row = {"decode_tok_s": round(1 / t1, 2), "decode_tok_s_weights_only": round(1 / tg.weights_s(1), 2),
               "decode_tok_s_no_overlap": round(1 / tg.no_overlap_s(), 2),
               "weight_mb": round(tg.weight_bytes / 1e6, 1), "kv_mb_at_context": round(tg.kv_bytes / 1e6, 1),
               "verify_cost": curve, "perfect_drafter": round(ceiling[0], 3), "perfect_drafter_T": ceiling[1]}
        # n-gram: on the CPU, in series; measured tokens and drafts per forward, the A76's verify cost
        ng_s = ms_n * NGRAM_SLOWDOWN / 1e3
        row["ngram"] = {"speedup": round(tau_n * t1 / (_interp(tg, 1 + d_n) + d_n * ng_s), 3)}
        # NPU drafter (RKLLM-rate draft), three ways of running it, and our graph at RKLLM's bandwidth
        npu = {}
        for mode in ("serial", "deferred", "shared"):
            b = best_k(tg, alpha_npu, npu_s, mode, rkllm_bytes)
            npu[mode] = {"speedup": round(b["speedup"], 3), "k": b["k"], "tokens_per_forward": round(b["tokens_per_forward"], 3)}
        b = best_k(tg, alpha_npu, our_npu_s, "shared", our_step_bytes)
        npu["shared_our_graph"] = {"speedup": round(b["speedup"], 3), "k": b["k"],
                                   "tokens_per_forward": round(b["tokens_per_forward"], 3)}
        row["npu"] = npu
        out["targets"][prec] = row
    # the draft's memory: the .rknn (else RKLLM's figure) plus the host's K/V arrays, the size fed each step
    draft_rss = (rknn_bytes or q05["memory_mb"] * 1e6) / 1e9 + graph_kv_bytes / 1e9
    out["memory_gb"] = {"target_measured_x86": TARGET_RSS_GB, "npu_draft": round(draft_rss, 2),
                        "total": round(TARGET_RSS_GB + draft_rss, 2), "seed_claim": SEED_RSS_GB}
    # "deferred" alone pretends the NPU had its own memory: the seed design's picture, not the SoC's
    physical = [(r["ngram"]["speedup"], f"ngram@{p}") for p, r in out["targets"].items()]
    physical += [(v["speedup"], f"npu-{m}@{p}") for p, r in out["targets"].items() for m, v in r["npu"].items()
                 if m != "deferred"]
    best = max(physical)
    out["seed_speedup_claim"] = SEED_SPEEDUP
    out["best_modelled_speedup"], out["best_modelled"] = round(best[0], 3), best[1]
    out["npu_deferred_own_memory"] = {p: r["npu"]["deferred"]["speedup"] for p, r in out["targets"].items()}
    return out


def _interp(tg: Target, t: float) -> float:
    lo = int(t)
    return tg.seconds(lo) + (t - lo) * (tg.seconds(lo + 1) - tg.seconds(lo))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bandwidth-gbs", type=float, default=BANDWIDTH_GBS[1],
                    help=f"sustained DRAM read bandwidth (default {BANDWIDTH_GBS[1]}: bench_arm's)")
    ap.add_argument("--context", type=int, default=3288,
                    help="tokens in the target's cache while it decodes (default: bench_spec's summarize task, 3230 stream + 58 prompt)")
    ap.add_argument("--npu-top1", type=float, default=1.0,
                    help="top-1 agreement of the NPU draft with the float draft (scales its acceptance)")
    ap.add_argument("--rknn-mb", type=float, default=None, help="the .rknn's size (its weights per step); default RKLLM's 0.5B")
    ap.add_argument("--graph-kv-mb", type=float, default=0.0,
                    help="fp32 K/V our graph takes in per step (k_cache + v_cache, from its input shapes)")
    args = ap.parse_args(argv)
    r = run(args.bandwidth_gbs, args.context, args.npu_top1,
            args.rknn_mb * 1e6 if args.rknn_mb else None, args.graph_kv_mb * 1e6)
    print(f"inputs: {args.bandwidth_gbs} GB/s, {CORES} x A76 at {CLOCK_GHZ} GHz, context {args.context}; "
          f"NPU draft {r['npu']['draft_ms_per_token']} ms/token (RKLLM Qwen2-0.5B w8a8), implying "
          f"{r['npu']['implied_read_gbs_0.5b']} GB/s of DRAM reads", file=sys.stderr)
    for prec, row in r["targets"].items():
        npu = row["npu"]
        print(f"{prec:5s} decode {row['decode_tok_s']:5.1f} tok/s (weights only {row['decode_tok_s_weights_only']:.1f}); "
              f"verify k4 {row['verify_cost'][4]:.2f} k8 {row['verify_cost'][8]:.2f}; ceiling {row['perfect_drafter']:.2f}x (T={row['perfect_drafter_T']}); "
              f"ngram {row['ngram']['speedup']:.2f}x; NPU serial {npu['serial']['speedup']:.2f}x, deferred "
              f"{npu['deferred']['speedup']:.2f}x, shared DRAM {npu['shared']['speedup']:.2f}x, our graph "
              f"{npu['shared_our_graph']['speedup']:.2f}x", file=sys.stderr)
    print_result(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())

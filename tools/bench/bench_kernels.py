"""Micro-benchmark of the quantized matmul kernels on the real model's matrices, one thread.

With --threads 1 timing is per-thread CPU time (time.thread_time), so that other processes
sharing the cores do not count; with --threads N (rows split in N contiguous ranges, one Python
thread each; the kernels release the GIL) it is wall time, as it is for the copy peer.
Either way other processes share the memory bus: run it on a quiet machine for final figures.
For each matrix kind it streams the same tensor of every layer in turn (so weights come from
DRAM, not cache) and reports weight GB/s at T=1 and the cost ratios time(T)/time(T=1) that
speculative verification depends on. Peer measured in the same run: single-thread memory copy
bandwidth (numpy). Last line: one JSON object.

    .venv/bin/python tools/bench/bench_kernels.py [--model PATH] [--reps N] [--scalar] [--kernel-plan DIR]

--kernel-plan DIR runs the calibrated plan in DIR (DIR/kernel_plan.json, as `linegate doctor --calibrate`
writes it under <data_dir>/cache); without it the static plan runs. The output names the plan that ran
and the CPU model.
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from gguf import GGUFReader

from gateway import _native as nat
from gateway.llm import kernel_plan
from tools.bench.harness import print_result

DEFAULT_MODEL = Path(os.environ.get("LINEGATE_MODEL_DIR", Path.home() / ".cache/linegate/models")) / \
    "qwen2.5-coder-1.5b-instruct.gguf"
KINDS = ("attn_q", "attn_output", "ffn_gate", "ffn_down", "output")  # output: the one lm_head matrix
T_VALUES = (1, 2, 4, 8, 16)


def run_all(pool: ThreadPoolExecutor, n_threads: int, fn, items) -> None:
    """One thread: in the calling thread, so that time.thread_time sees the work."""
    if n_threads == 1:
        for item in items:
            fn(item)
    else:
        list(pool.map(fn, items))


def copy_bandwidth_gbs(pool: ThreadPoolExecutor, n_threads: int, n_bytes: int = 256 << 20, reps: int = 3) -> float:
    """Bytes copied per second by a large numpy copy split over n_threads (numpy drops the GIL)."""
    src = np.ones(n_bytes, np.uint8)
    dst = np.zeros_like(src)
    parts = np.array_split(np.arange(n_bytes), n_threads)
    spans = [(int(p[0]), int(p[-1]) + 1) for p in parts]
    clock = time.thread_time if n_threads == 1 else time.perf_counter
    best = float("inf")
    for _ in range(reps):
        t = clock()
        run_all(pool, n_threads, lambda ab: np.copyto(dst[ab[0]:ab[1]], src[ab[0]:ab[1]]), spans)
        best = min(best, clock() - t)
    return n_bytes / best / 1e9


def bench_tensors(pool: ThreadPoolExecutor, n_threads: int, tensors, T: int, reps: int, scalar: bool,
                  precision: int) -> float:
    """Seconds for one pass over all tensors (best of reps), y = x @ W.T with T vectors."""
    fn = nat.matmul_scalar if scalar else nat.matmul
    rng = np.random.default_rng(0)
    K = tensors[0][2]
    x = rng.standard_normal((T, K)).astype(np.float32)
    acts = nat.prepare_acts(tensors[0][1], x, precision)
    clock = time.thread_time if n_threads == 1 else time.perf_counter

    def run_range(i: int) -> None:
        for W, qt, _K, n_rows in tensors:
            fn(qt, W, n_rows, acts, x, n_rows * i // n_threads, n_rows * (i + 1) // n_threads)

    best = float("inf")
    for _ in range(reps):
        t = clock()
        run_all(pool, n_threads, run_range, range(n_threads))
        best = min(best, clock() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--layers", type=int, default=28, help="layers to cycle through (defeats the cache)")
    ap.add_argument("--scalar", action="store_true", help="time the scalar reference path instead")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--precision", type=int, default=1, choices=(0, 1), help="activations: 0 = q8, 1 = q8x2")
    ap.add_argument("--kernel-plan", type=Path, help="folder of a calibrated kernel plan to run (default: static)")
    args = ap.parse_args()
    plan = kernel_plan.load(args.kernel_plan) if args.kernel_plan else "static"
    if args.kernel_plan and plan != "calibrated":
        raise SystemExit(f"bench_kernels: no usable kernel plan in {args.kernel_plan} (see the log line above)")

    reader = GGUFReader(args.model)
    by_name = {t.name: t for t in reader.tensors}
    pool = ThreadPoolExecutor(args.threads)
    copy_gbs = copy_bandwidth_gbs(pool, args.threads)
    result = {"cpu_model": kernel_plan.cpu_model(), "kernel_plan": plan,
              "simd": nat.quant_simd_name(), "path": "scalar" if args.scalar else "simd",
              "threads": args.threads, "precision": ["q8", "q8x2"][args.precision], "copy_gbs": round(copy_gbs, 2)}
    print(f"cpu: {result['cpu_model']}; kernel plan: {plan}")
    print(f"kernels: {result['path']} ({nat.quant_simd_name()}), acts {result['precision']}, {args.threads} thread(s); "
          f"numpy copy: {copy_gbs:.1f} GB/s")
    for kind in KINDS:
        tensors = []
        names = ["output.weight"] if kind == "output" else [f"blk.{i}.{kind}.weight" for i in range(args.layers)]
        for name in names:
            t = by_name.get(name)
            if t is None:
                break
            raw = np.asarray(t.data).reshape(-1).view(np.uint8)
            tensors.append((raw, int(t.tensor_type), int(t.shape[0]), int(t.shape[1])))
        if not tensors:  # e.g. tied embeddings: no output.weight
            continue
        first = names[0]
        n_bytes = sum(w.nbytes for w, *_ in tensors)
        times = {T: bench_tensors(pool, args.threads, tensors, T, args.reps, args.scalar, args.precision) for T in T_VALUES}
        gbs = n_bytes / times[1] / 1e9
        qt_name = by_name[first].tensor_type.name
        shape = f"{tensors[0][3]}x{tensors[0][2]}"
        ratios = {T: times[T] / times[1] for T in T_VALUES}
        print(f"{kind:12s} {qt_name:5s} {shape:11s} x{len(tensors)} layers: T=1 {gbs:6.2f} GB/s "
              f"({gbs / copy_gbs:.2f}x copy)  " + "  ".join(f"T={T}: {ratios[T]:.2f}x" for T in T_VALUES[1:]))
        result[kind] = {"type": qt_name, "gbs_t1": round(gbs, 2),
                        **{f"cost_t{T}": round(ratios[T], 3) for T in T_VALUES[1:]}}
    print_result(result)


if __name__ == "__main__":
    main()

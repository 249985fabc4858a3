"""Predicted speed of the engine's aarch64 kernels on the RK3588's Cortex-A76 cores, side by side with
llama.cpp's NEON kernels, without the board: every figure is measured on a model or an emulator, none on
an A76. Three parts, each labelled in the output:

1. Cycles per weight block (per row and per record) of each kernel's block loop, from llvm-mca
   (LLVM 19, -mcpu=neoverse-n1: LLVM's -mcpu=cortex-a76 applies the Cortex-A57 model, checked below;
   the N1 is the A76's server sibling with the same core pipeline). Ours: native/quant/arm compiled as
   CMakeLists.txt builds it (GCC 12 -O3, the dotprod variant); the packed kernels (neon_packed.cpp) for the
   types the engine packs at load, the row-lane and reducing kernels for the others. llama.cpp: ggml-cpu's arch/arm quants.c
   (ggml_vec_dot_*) and repack.cpp (gemv/gemm on repacked weights, what it runs on a dotprod core for
   Q4_0, Q8_0, Q4_K, Q5_K, Q6_K) from the llama-cpp-python sdist the engine benchmark uses, compiled with
   -O3 -mcpu=cortex-a76 (a GGML_NATIVE build on the board).
2. Instructions per token: ours counted under qemu-aarch64 -cpu cortex-a76 with a TCG plugin
   (arm/qemu_insn.c) on arm/matmul_probe.cpp, beside the static count (instructions per block loop
   times blocks) that is the only figure for llama.cpp (its kernels are not built into a program here).
3. The i8mm variant (neon_i8mm.cpp: smmla packed kernels, not for the RK3588, whose A76 lacks i8mm) on
   llvm-mca -mcpu=neoverse-n2 (an Armv9 core with i8mm; LLVM 19 has its own N2 model, checked below), beside
   our dotprod packed kernels on the same model and llama.cpp's kernels for an i8mm core (repack.cpp's
   gemm/gemv 4x8 and 8x8, compiled with -mcpu=neoverse-n2; vec_dot for the types it does not repack).
4. A roofline of the RK3588 for the 1.5B and 0.5B: each weight matrix takes max(bytes / bandwidth,
   cycles / (4 cores x clock)), summed over the model's matrices (attention, norms and the activation
   quantization are left out). Decode tok/s, prefill-512 tok/s, verify_cost_k4/k8 = time(K tokens) /
   time(1 token). Ours at one-term q8 activations (llama.cpp's scheme; the engine's default on aarch64,
   engine.act_precision "auto") and at two-term q8x2 (two records a token; the default elsewhere).

    .venv/bin/python tools/bench/bench_arm.py [--llama-sdist PATH] [--bandwidth-gbs 22] [--no-qemu]

Needs aarch64-linux-gnu-g++, llvm-mca-19 and qemu-user (tools/setup_system.sh --bench-arm). Last line: one JSON
object.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))   # the tools package, run as a file
from tools.bench import arm_asm as A  # noqa: E402
from tools.bench.harness import print_result  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SRC_CACHE = REPO / "build" / "bench-llama-src"
MODELS = {"1.5b": "qwen2.5-coder-1.5b-instruct", "0.5b": "qwen2.5-coder-0.5b-instruct"}
CPU = "neoverse-n1"

# RK3588, A76 cluster: the board figures the roofline model uses (cores, clock, sustained and theoretical
# read bandwidth). Their sources and how they were chosen: docs/perf/2026-12-02-arm-kernels.md.
CORES, CLOCK_GHZ = 4, 2.4
BANDWIDTH_GBS = (17.0, 22.0)
THEORETICAL_GBS = 34.1

BLOCK = {"Q4_0": (32, 18), "Q4_1": (32, 20), "Q5_0": (32, 22), "Q5_1": (32, 24), "Q8_0": (32, 34),
         "Q4_K": (256, 144), "Q5_K": (256, 176), "Q6_K": (256, 210)}   # elements, bytes
GGML_ID = {"Q4_0": 2, "Q4_1": 3, "Q5_0": 6, "Q5_1": 7, "Q8_0": 8}
NS = "lg::quant::neon_dotprod::"
# The types the engine packs at load on aarch64 (quant/repack.cpp: every quantized type), their kernel templates
# and record tiles (neon_packed.cpp: tile_of).
PACKED = {"Q4_0": "packed_legacy<(lg::GGMLType)2, ", "Q4_1": "packed_legacy<(lg::GGMLType)3, ",
          "Q5_0": "packed_legacy<(lg::GGMLType)6, ", "Q5_1": "packed_legacy<(lg::GGMLType)7, ",
          "Q8_0": "packed_legacy<(lg::GGMLType)8, ", "Q4_K": "packed_q45k<false, ", "Q5_K": "packed_q45k<true, ",
          "Q6_K": "packed_q6k<"}
PACKED_TILES = {t: (1, 2, 4, 8) for t in PACKED}
# The i8mm variant's smmla kernels (neon_packed_mm.h, included by neon_packed.cpp under LG_NEON_I8MM) for every
# packed type, same tiles; and the core model they are costed on.
CPU_I8MM = "neoverse-n2"
NS_I8MM = "lg::quant::neon_i8mm::"
MM = {"Q4_0": "mm_legacy<(lg::GGMLType)2, ", "Q4_1": "mm_legacy<(lg::GGMLType)3, ",
      "Q5_0": "mm_legacy<(lg::GGMLType)6, ", "Q5_1": "mm_legacy<(lg::GGMLType)7, ",
      "Q8_0": "mm_legacy<(lg::GGMLType)8, ", "Q4_K": "mm_q45k<false, ", "Q5_K": "mm_q45k<true, ", "Q6_K": "mm_q6k<"}
OUR_FLAGS = ["-std=c++17", "-O3", "-fno-math-errno", "-march=armv8-a", "-Inative"]


def sdot_per(qk: int) -> int:
    return qk // 16   # sdot per block, row and record


def our_kernels() -> dict:
    """(type, kind) -> (function, nest trips, sdot per iteration, block x row x record units per iteration).
    kind 'rl1'/'rl2': row-lane, 1/2 records; 'red': the reducing kernel's block loop and record loop; 'pk1'/'pk2'/
    'pk4'/'pk8': packed 4-row groups, 1/2/4/8 records."""
    k = {}
    for t, gid in GGML_ID.items():
        for nt in (1, 2):
            k[t, f"rl{nt}"] = (f"{NS}(anonymous namespace)::rowlane_legacy<(lg::GGMLType){gid}, {nt}>", [1],
                               64 * nt, 32 * nt)
    for t, blk in (("Q4_K", "BlockQ4K"), ("Q5_K", "BlockQ5K")):
        k[t, "rl1"] = (f"{NS}rowlane_kquant<lg::{blk}, 1>", [1], 64, 4)
    for t, blk in (("Q4_K", "BlockQ4K"), ("Q5_K", "BlockQ5K"), ("Q6_K", "BlockQ6K")):
        k[t, "red"] = (f"{NS}(anonymous namespace)::reduce_kquant<lg::{blk}>", [1, 1], 16, 1)
    # packed weights (native/quant/arm/neon_packed.cpp): one block of a 4-row group against a tile of nt records
    for t, fn in PACKED.items():
        for nt in PACKED_TILES[t]:
            # K-quants: the block loop and its loop over sub-block pairs (Q4_K/Q5_K: 4 trips) or sub-blocks (Q6_K: 16)
            trips = [1, 4] if t in ("Q4_K", "Q5_K") else [1, 16] if t == "Q6_K" else [1]
            # Q4_K/Q5_K: 4 (8) more sdot a record for the mins (and Q5_K's offset correction)
            extra = {"Q4_K": 4, "Q5_K": 8}.get(t, 0)
            k[t, f"pk{nt}"] = (f"{NS}(anonymous namespace)::{fn}{nt}>", trips, (4 * sdot_per(BLOCK[t][0]) + extra) * nt,
                               4 * nt)
    return k


def our_i8mm_kernels() -> dict:
    """(type, 'mm1'/'mm2'/'mm4'/'mm8') -> (function, nest trips, smmla per iteration, units) of the i8mm variant's
    packed kernels: per block and record pair, 8 smmla a 32-value block (two row pairs x 4), Q4_K/Q5_K 4 (8)
    more for the mins (and Q5_K's correction); one record: as many plain sdot instead."""
    k = {}
    for t, fn in MM.items():
        for nt in PACKED_TILES[t]:
            pairs = (nt + 1) // 2
            trips = [1, 4] if t in ("Q4_K", "Q5_K") else [1, 16] if t == "Q6_K" else [1]
            if nt == 1 and t in ("Q4_1", "Q5_1"):
                # GCC 12 lays the lane loop's tail (once a lane, not a block) out as a loop nested under the
                # block loop's label: it runs 0 times a block
                trips = [1, 0]
            mm = (BLOCK[t][0] // 4 + {"Q4_K": 4, "Q5_K": 8}.get(t, 0)) * pairs
            k[t, f"mm{nt}"] = (f"{NS_I8MM}(anonymous namespace)::{fn}{nt}>", trips, mm, 4 * nt)
    return k


def llama_i8mm_kernels() -> dict:
    """llama_kernels' table for an i8mm core: what ggml-cpu's repack.cpp picks there (Q4_0, Q8_0: 4x8; Q4_K, Q5_K,
    Q6_K: 8x8), gemm (smmla, 4 records; Q4_0 also 16) and gemv (sdot, one record); Q4_1/Q5_0/Q5_1 vec_dot (its
    two-row smmla vec_dot for Q4_1 is not modelled). Nests from the GCC -O3 -mcpu=neoverse-n2 assembly: block
    loop, sub-block loop, scale-decode loop."""
    k = {t: v for t, v in llama_kernels().items() if v[0] == "quants" and t[0] in ("Q4_1", "Q5_0", "Q5_1")}
    k["Q4_0", "gemv"] = ("repack", "ggml_gemv_q4_0_4x8_q8_0", [1], 8, 4)
    k["Q4_0", "gemm"] = ("repack", "ggml_gemm_q4_0_4x8_q8_0", [1], 16, 16)
    k["Q4_0", "gemm16"] = ("repack", "ggml_gemm_q4_0_4x8_q8_0", [1], 64, 64)
    k["Q8_0", "gemv"] = ("repack", "ggml_gemv_q8_0_4x8_q8_0", [1], 8, 4)
    k["Q8_0", "gemm"] = ("repack", "ggml_gemm_q8_0_4x8_q8_0", [1], 16, 16)
    k["Q4_K", "gemv"] = ("repack", "ggml_gemv_q4_K_8x8_q8_K", [1, 4, 8], 128, 8)
    k["Q5_K", "gemv"] = ("repack", "ggml_gemv_q5_K_8x8_q8_K", [1, 4, 8], 128, 8)
    k["Q6_K", "gemv"] = ("repack", "ggml_gemv_q6_K_8x8_q8_K", [1, 8], 128, 8)
    k["Q4_K", "gemm"] = ("repack", "ggml_gemm_q4_K_8x8_q8_K", [1, 4], 256, 32)
    k["Q5_K", "gemm"] = ("repack", "ggml_gemm_q5_K_8x8_q8_K", [1, 4, 16], 256, 32)
    k["Q6_K", "gemm"] = ("repack", "ggml_gemm_q6_K_8x8_q8_K", [1, 8], 256, 32)
    return k


def llama_kernels() -> dict:
    """(type, kind) -> (source, function, nest trips, sdot per iteration, units). kind 'vec': ggml_vec_dot (one
    row, one record), 'gemv': repacked, one record, 'gemm': repacked, 4 records (q4_0 also 16: 'gemm16')."""
    k = {}
    for t, fn in (("Q4_0", "q4_0_q8_0"), ("Q4_1", "q4_1_q8_1"), ("Q5_0", "q5_0_q8_0"), ("Q5_1", "q5_1_q8_1"),
                  ("Q8_0", "q8_0_q8_0")):
        k[t, "vec"] = ("quants", f"ggml_vec_dot_{fn}", [1], 4, 2)   # two blocks an iteration
    for t in ("Q4_K", "Q5_K", "Q6_K"):
        k[t, "vec"] = ("quants", f"ggml_vec_dot_{t[:2].lower()}_K_q8_K", [1], 16, 1)
    k["Q4_0", "gemv"] = ("repack", "ggml_gemv_q4_0_4x4_q8_0", [1], 8, 4)
    k["Q8_0", "gemv"] = ("repack", "ggml_gemv_q8_0_4x4_q8_0", [1], 8, 4)
    k["Q4_0", "gemm"] = ("repack", "ggml_gemm_q4_0_4x4_q8_0", [1], 32, 16)
    k["Q4_0", "gemm16"] = ("repack", "ggml_gemm_q4_0_4x4_q8_0", [1], 128, 64)
    k["Q8_0", "gemm"] = ("repack", "ggml_gemm_q8_0_4x4_q8_0", [1], 32, 16)
    # nests from repack.cpp: block loop, sub-block loop (4 or 2 halves x 4), scale-decode or inner k loop
    k["Q4_K", "gemv"] = ("repack", "ggml_gemv_q4_K_8x4_q8_K", [1, 4, 8], 128, 8)
    k["Q5_K", "gemv"] = ("repack", "ggml_gemv_q5_K_8x4_q8_K", [1, 4, 8], 128, 8)
    k["Q6_K", "gemv"] = ("repack", "ggml_gemv_q6_K_8x4_q8_K", [1, 2, 8], 128, 8)
    k["Q4_K", "gemm"] = ("repack", "ggml_gemm_q4_K_8x4_q8_K", [1, 4, 8], 512, 32)
    k["Q5_K", "gemm"] = ("repack", "ggml_gemm_q5_K_8x4_q8_K", [1, 4, 8, 32], 512, 32)
    k["Q6_K", "gemm"] = ("repack", "ggml_gemm_q6_K_8x4_q8_K", [1, 2, 8], 512, 32)
    return k


def llama_sdist(path: str | None) -> Path:
    """The llama-cpp-python sdist (the installed version's), downloaded once into build/bench-llama-src."""
    if path:
        return Path(path)
    from importlib.metadata import version
    ver = version("llama_cpp_python")
    SRC_CACHE.mkdir(parents=True, exist_ok=True)
    hits = sorted(SRC_CACHE.glob(f"llama_cpp_python-{ver}.tar.gz"))
    if not hits:
        print(f"downloading the llama-cpp-python {ver} sdist ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", "llama-cpp-python",
                        "-d", str(SRC_CACHE), f"llama-cpp-python=={ver}"], check=True)
        hits = sorted(SRC_CACHE.glob(f"llama_cpp_python-{ver}.tar.gz"))
    return hits[0]


def build_asm(sdist: Path, tmp: Path) -> dict[str, dict]:
    ours = A.compile_asm(A.CROSS_CXX, OUR_FLAGS, Path("native/quant/arm/neon_dotprod.cpp"), tmp / "ours.s", REPO)
    with tarfile.open(sdist) as tf:
        members = [m for m in tf.getmembers() if "/vendor/llama.cpp/ggml/" in m.name]
        tf.extractall(tmp, members=members, filter="data")
    ggml = next(tmp.glob("*/vendor/llama.cpp/ggml"))
    inc = [f"-I{ggml / 'include'}", f"-I{ggml / 'src'}", f"-I{ggml / 'src/ggml-cpu'}"]
    flags = ["-O3", "-mcpu=cortex-a76", "-DNDEBUG", "-D_GNU_SOURCE", *inc]
    arm = ggml / "src/ggml-cpu/arch/arm"
    quants = A.compile_asm(A.CROSS_CC, ["-std=c11", *flags], arm / "quants.c", tmp / "quants.s", REPO)
    repack = A.compile_asm(A.CROSS_CXX, ["-std=c++17", *flags], arm / "repack.cpp", tmp / "repack.s", REPO)
    # the i8mm comparison: ours as built (the variant's target pragma), llama.cpp as a native build on an N2
    ours_mm = A.compile_asm(A.CROSS_CXX, OUR_FLAGS, Path("native/quant/arm/neon_i8mm.cpp"), tmp / "ours_i8mm.s", REPO)
    flags_n2 = [f"-mcpu={CPU_I8MM}" if f.startswith("-mcpu=") else f for f in flags]
    quants_n2 = A.compile_asm(A.CROSS_CC, ["-std=c11", *flags_n2], arm / "quants.c", tmp / "quants_n2.s", REPO)
    repack_n2 = A.compile_asm(A.CROSS_CXX, ["-std=c++17", *flags_n2], arm / "repack.cpp", tmp / "repack_n2.s", REPO)
    return {"ours": A.functions(ours), "quants": A.functions(quants), "repack": A.functions(repack),
            "ours_i8mm": A.functions(ours_mm), "quants_n2": A.functions(quants_n2), "repack_n2": A.functions(repack_n2)}


def model_nest(funcs: dict, fn: str, trips: list[int], sdot: int, cpu: str = CPU,
               ops: tuple[str, ...] = ("sdot", "smmla")) -> list[dict]:
    bodies = A.block_loop(A.find_function(funcs, fn), trips, sdot, ops)
    return [A.mca(b, cpu) | {"trips": t} for t, b in zip(trips, bodies)]


def nest_cost(nest: list[dict], units: int) -> dict:
    return {"cycles": sum(n["trips"] * n["cycles"] for n in nest) / units,
            "insns": sum(n["trips"] * n["insns"] for n in nest) / units,
            "bottleneck": max(nest, key=lambda n: n["trips"] * n["cycles"])["bottleneck"]}


def analyse_i8mm(asm: dict) -> tuple[dict, dict, dict]:
    """On the N2 model: our dotprod packed kernels (kinds pk*), our i8mm kernels (mm*, as pk* for ours_cost),
    and llama.cpp's i8mm-core kernels."""
    dot, mm, llama = {}, {}, {}
    for (t, kind), (fn, trips, sdot, units) in our_kernels().items():
        if kind.startswith("pk"):
            dot[t, kind] = nest_cost(model_nest(asm["ours"], fn, trips, sdot, CPU_I8MM), units)
    for (t, kind), (fn, trips, n_mm, units) in our_i8mm_kernels().items():
        mm[t, "pk" + kind[2:]] = nest_cost(model_nest(asm["ours_i8mm"], fn, trips, n_mm, CPU_I8MM), units)
    for (t, kind), (src, fn, trips, sdot, units) in llama_i8mm_kernels().items():
        # vec_dot: its one-record sdot loop (an i8mm build also has a two-row smmla loop, not modelled)
        ops = ("sdot",) if kind == "vec" else ("sdot", "smmla")
        llama[t, kind] = nest_cost(model_nest(asm[src + "_n2"], fn, trips, sdot, CPU_I8MM, ops), units)
    return dot, mm, llama


def table_i8mm(dot: dict, mm: dict, llama: dict) -> tuple[list[dict], list[str]]:
    rows = []
    lines = [f"{'type':5} {'records':>7} {'dotprod':>8} {'i8mm':>8} {'llama':>8} {'i8/dot':>6} {'i8/llama':>8}  (cycles "
             f"per block, row and record; llvm-mca -mcpu={CPU_I8MM})"]
    for t in BLOCK:
        for n in (1, 2, 4, 8, 16):
            d, m, lm = ours_cost(dot, t, n) / n, ours_cost(mm, t, n) / n, llama_cost(llama, t, n) / n
            rows.append({"type": t, "records": n, "dotprod_cycles_per_block": round(d, 2),
                         "i8mm_cycles_per_block": round(m, 2), "llama_i8mm_cycles_per_block": round(lm, 2),
                         "i8mm_vs_dotprod": round(m / d, 3), "i8mm_vs_llama": round(m / lm, 3)})
            lines.append(f"{t:5} {n:7d} {d:8.2f} {m:8.2f} {lm:8.2f} {m / d:6.2f} {m / lm:8.2f}")
    return rows, lines


def analyse(asm: dict) -> tuple[dict, dict]:
    """Cycles and instructions per block, row and record of every kernel (reduce: its block loop's and its
    record loop's separately, decode + n x record for n records)."""
    ours, llama = {}, {}
    for (t, kind), (fn, trips, sdot, units) in our_kernels().items():
        nest = model_nest(asm["ours"], fn, trips, sdot)
        if kind == "red":
            ours[t, kind] = {"decode": nest[0]["cycles"], "record": nest[1]["cycles"],
                             "insns_decode": nest[0]["insns"], "insns_record": nest[1]["insns"],
                             "bottleneck": nest[1]["bottleneck"]}
        else:
            ours[t, kind] = {"cycles": sum(n["trips"] * n["cycles"] for n in nest) / units,
                             "insns": sum(n["trips"] * n["insns"] for n in nest) / units,
                             "bottleneck": max(nest, key=lambda n: n["trips"] * n["cycles"])["bottleneck"]}
    for (t, kind), (src, fn, trips, sdot, units) in llama_kernels().items():
        nest = model_nest(asm[src], fn, trips, sdot)
        llama[t, kind] = {"cycles": sum(n["trips"] * n["cycles"] for n in nest) / units,
                          "insns": sum(n["trips"] * n["insns"] for n in nest) / units,
                          "bottleneck": max(nest, key=lambda n: n["trips"] * n["cycles"])["bottleneck"]}
    return ours, llama


def ours_cost(ours: dict, t: str, n: int, key: str = "cycles") -> float:
    """Our cycles (or instructions) per block and row for a call of n records: packed types (all, on aarch64) in the
    tiles of neon_packed.cpp's tile_of (the largest first); else as plan.h routes it."""
    if t in PACKED:
        c = 0.0
        while n:
            nt = max(k for k in PACKED_TILES[t] if k <= n)
            c, n = c + nt * ours[t, f"pk{nt}"][key], n - nt
        return c
    if BLOCK[t][0] == 32:   # row-lane, tiles of 2 records then 1
        return (n // 2) * 2 * ours[t, "rl2"][key] + (n % 2) * ours[t, "rl1"][key]
    if n == 1 and (t, "rl1") in ours:
        return ours[t, "rl1"][key]
    red, sfx = ours[t, "red"], "" if key == "cycles" else "insns_"
    full, rest = divmod(n, 8)   # R_TILE records share a decode
    tiles = [8] * full + ([rest] if rest else [])
    return sum(red[f"{sfx}decode"] + nt * red[f"{sfx}record"] for nt in tiles)


def llama_cost(llama: dict, t: str, n: int, key: str = "cycles") -> float:
    """llama.cpp's cycles per block and row for n records: repacked types gemm over 4-record (Q4_0: 16 first)
    tiles, gemv for the rest; other types vec_dot per record."""
    if (t, "gemv") not in llama:
        return n * llama[t, "vec"][key]
    c = 0.0
    if (t, "gemm16") in llama:
        c += (n // 16) * 16 * llama[t, "gemm16"][key]
        n %= 16
    c += (n // 4) * 4 * llama[t, "gemm"][key]
    return c + (n % 4) * llama[t, "gemv"][key]


def model_matrices(name: str) -> list[tuple[str, int, int]]:
    """(type, K, rows) of every weight matrix a token multiplies (all but token_embd, a row lookup)."""
    import gguf
    from gateway.llm.models import resolve_model
    out = []
    for tensor in gguf.GGUFReader(str(resolve_model(name))).tensors:
        if len(tensor.shape) == 2 and tensor.name != "token_embd.weight":
            t = tensor.tensor_type.name
            if t not in BLOCK:
                raise ValueError(f"{name}: {tensor.name} is {t}, which this model of the kernels does not cover")
            out.append((t, int(tensor.shape[0]), int(tensor.shape[1])))
    return out


def forward_seconds(mats: list, cost, records: int, bw_gbs: float) -> tuple[float, float, float]:
    """(roofline seconds, additive seconds, weight bytes) of one forward of `records` records."""
    roof = add = nbytes = 0.0
    for t, K, rows in mats:
        qk, bb = BLOCK[t]
        blocks = rows * K / qk
        mem = blocks * bb / (bw_gbs * 1e9)
        cpu = blocks * cost(t, records) / (CORES * CLOCK_GHZ * 1e9)
        roof, add, nbytes = roof + max(mem, cpu), add + mem + cpu, nbytes + blocks * bb
    return roof, add, nbytes


def predict(mats: list, cost, per_token: int, bw_gbs: float) -> dict:
    one, one_add, nbytes = forward_seconds(mats, cost, per_token, bw_gbs)
    out = {"decode_tok_s": 1 / one, "decode_tok_s_no_overlap": 1 / one_add,
           "roofline_fraction": nbytes / (bw_gbs * 1e9) / one,
           "prefill512_tok_s": 512 / forward_seconds(mats, cost, 512 * per_token, bw_gbs)[0]}
    for k in (4, 8):
        out[f"verify_cost_k{k}"] = forward_seconds(mats, cost, k * per_token, bw_gbs)[0] / one
    return out


def qemu_counts(mats: list, tmp: Path, ours: dict) -> dict:
    """Instructions per token of our kernels under qemu (cortex-a76), per (type, K) on a 64-row sample scaled
    to the model's rows, beside the static count from the block loops."""
    probe, plugin = tmp / "matmul_probe", tmp / "libqemu_insn.so"
    srcs = ["tools/bench/arm/matmul_probe.cpp", "native/gguf.cpp",
            *sorted(str(p.relative_to(REPO)) for p in (REPO / "native/quant").rglob("*.cpp"))]
    subprocess.run([A.CROSS_CXX, "-static", *OUR_FLAGS, *srcs, "-o", str(probe)], cwd=REPO, check=True)
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", str(REPO / "tools/bench/arm/qemu_insn.c"), "-o", str(plugin)],
                   check=True)

    def insns(args: list[str], calls: int) -> int:
        run = subprocess.run(["qemu-aarch64", "-cpu", "cortex-a76", "-plugin", str(plugin), "-d", "plugin",
                              str(probe), *args, str(calls)], capture_output=True, text=True, check=True)
        return int(run.stderr.split("insns ")[-1].split()[0])

    out = {}
    for prec, n in (("q8", 1), ("q8x2", 2)):
        dyn = static = 0.0
        for t, K in sorted({(t, K) for t, K, _ in mats}):
            args, rows = [t, str(K), "64", "1", prec], sum(r for tt, kk, r in mats if (tt, kk) == (t, K))
            per_call = insns(args, 2) - insns(args, 1)
            dyn += per_call * rows / 64
            static += ours_cost(ours, t, n, "insns") * rows * K / BLOCK[t][0]
        out[prec] = {"qemu_insns_per_token": dyn, "static_insns_per_token": static}
    return out


def table(ours: dict, llama: dict) -> tuple[list[dict], list[str]]:
    rows, lines = [], [f"{'type':5} {'records':>7} {'ours':>8} {'llama':>8} {'ratio':>6}  (cycles per block, row and "
                       "record; llvm-mca -mcpu=neoverse-n1)"]
    for t in BLOCK:
        for n in (1, 2, 4, 8, 16):
            o, lm = ours_cost(ours, t, n) / n, llama_cost(llama, t, n) / n
            rows.append({"type": t, "records": n, "ours_cycles_per_block": round(o, 2),
                         "llama_cycles_per_block": round(lm, 2), "ratio": round(o / lm, 3)})
            lines.append(f"{t:5} {n:7d} {o:8.2f} {lm:8.2f} {o / lm:6.2f}")
    return rows, lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llama-sdist", help="path of the llama-cpp-python sdist (default: download the installed version)")
    ap.add_argument("--bandwidth-gbs", type=float, default=BANDWIDTH_GBS[1],
                    help=f"sustained read bandwidth of the A76 cluster (default {BANDWIDTH_GBS[1]}, the top of the "
                         f"measured {BANDWIDTH_GBS[0]}-{BANDWIDTH_GBS[1]} GB/s: the stricter case for the kernels)")
    ap.add_argument("--no-qemu", action="store_true", help="skip the instruction counts under qemu")
    args = ap.parse_args(argv)
    for tool in (A.CROSS_CXX, A.CROSS_CC, A.MCA, *(() if args.no_qemu else ("qemu-aarch64", "gcc"))):
        if not shutil.which(tool):
            print(f"bench_arm: {tool} not found (tools/setup_system.sh --bench-arm installs it)", file=sys.stderr)
            return 2
    sched = A.scheduling_model_check()
    print(f"llvm-mca {sched['llvm_mca']}: -mcpu=cortex-a76 applies the "
          f"{'Cortex-A57' if sched['cortex_a76_is_a57_model'] else 'Neoverse N1' if sched['cortex_a76_is_n1_model'] else 'own'}"
          f" model; the figures below use -mcpu={CPU}; -mcpu={CPU_I8MM} schedules smmla on {sched['neoverse_n2_units']}")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        asm = build_asm(llama_sdist(args.llama_sdist), tmp)
        ours, llama = analyse(asm)
        rows, lines = table(ours, llama)
        print("\n".join(lines))
        mm_rows, mm_lines = table_i8mm(*analyse_i8mm(asm))
        print("\n".join(mm_lines))
        from gateway.llm.engine import auto_act_precision
        default = f"ours_{auto_act_precision('aarch64')}"   # what the engine runs on the box
        result = {"cpu_model": CPU, "scheduling": sched, "clock_ghz": CLOCK_GHZ, "cores": CORES,
                  "default_precision": default.removeprefix("ours_"),
                  "bandwidth_gbs": args.bandwidth_gbs, "kernels": rows, "models": {},
                  "i8mm": {"cpu_model": CPU_I8MM, "kernels": mm_rows}}
        for key, name in MODELS.items():
            mats = model_matrices(name)
            pred = {"ours_q8x2": predict(mats, lambda t, n: ours_cost(ours, t, n), 2, args.bandwidth_gbs),
                    "ours_q8": predict(mats, lambda t, n: ours_cost(ours, t, n), 1, args.bandwidth_gbs),
                    "llama": predict(mats, lambda t, n: llama_cost(llama, t, n), 1, args.bandwidth_gbs)}
            if not args.no_qemu:
                pred["instructions"] = qemu_counts(mats, tmp, ours) | {"llama_static_insns_per_token": sum(
                    llama_cost(llama, t, 1, "insns") * rows_ * K / BLOCK[t][0] for t, K, rows_ in mats)}
            pred["ours_default"] = pred[default]
            result["models"][key] = pred
            for who in ("ours_q8x2", "ours_q8", "llama"):
                p = pred[who]
                print(f"{key} {who + (' (default)' if who == default else ''):19}: decode {p['decode_tok_s']:6.1f} tok/s (roofline {p['roofline_fraction']:.2f}), "
                      f"prefill-512 {p['prefill512_tok_s']:6.1f} tok/s, verify k4 {p['verify_cost_k4']:.2f} "
                      f"k8 {p['verify_cost_k8']:.2f}")
            if "instructions" in pred:
                print(f"{key} instructions per token: {json.dumps(pred['instructions'])}")
    print_result(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""native/cuda's kernels compiled for the host by tests/cuda/emu (one host thread per CUDA thread; int8
mma by its PTX fragment layout), so they are checked where no GPU is: the tensor-core and 8-token dp4a
matmuls give the one-token kernel's values bit for bit, and those values are gguf's dequantized weights
times the activations; the fused RMSNorm + quantizer writes numpy's RMSNorm and exactly the CPU's
quantization of it; the K/V store and attention kernels follow the cache's rotation rules. Needs the CUDA
headers and g++; else skips. Programmatic dependent launch (pdl) and timing need a GPU
(tests/cuda/test_cuda_parity.py, tools/bench/bench_cuda.py). Knows nothing about models.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import gguf
from gguf import GGMLQuantizationType as Q

REPO = Path(__file__).resolve().parents[2]
EMU = Path(__file__).resolve().parent / "emu"
from tools.convert import random_gguf  # noqa: E402

TYPE_ID = {Q.Q4_0: 2, Q.Q4_1: 3, Q.Q5_0: 6, Q.Q8_0: 8, Q.Q4_K: 12, Q.Q6_K: 14}
ABLK = {Q.Q4_K: 256, Q.Q6_K: 256}  # activation block; 32 for the legacy types
UNIT = 32
REL_TOL = 2e-5  # float32 sums over K <= 1024 terms against the float64 reference, relative to the row's scale

# (weight type, records per vector, gate+up fused, rows, K, tokens, lanes per row): partial row tiles
# (120, 72, 80, 40 rows), one and several token passes (T = 40: 4 tiles), Q6_K's split halves, lanes per
# row 4 .. 128 (128: four warps a row and empty slots).
CASES = [
    (Q.Q4_K, 2, False, 120, 512, 8, 16),
    (Q.Q4_K, 2, True, 64, 512, 5, 8),
    (Q.Q4_K, 1, False, 80, 512, 11, 4),
    (Q.Q4_K, 2, False, 64, 1024, 40, 32),
    (Q.Q4_K, 2, False, 64, 1024, 3, 128),
    (Q.Q6_K, 2, False, 72, 512, 9, 16),
    (Q.Q6_K, 1, True, 64, 512, 3, 8),
    (Q.Q5_0, 2, False, 64, 256, 7, 4),
    (Q.Q8_0, 2, False, 48, 256, 6, 8),
    (Q.Q4_1, 2, True, 64, 256, 4, 4),
    (Q.Q4_0, 1, False, 40, 256, 17, 8),
    (Q.Q4_K, 2, True, 64, 1536, 32, 32),   # the 1.5B's gate+up row length, the deadline workload's chunk
    (Q.Q6_K, 2, False, 48, 1536, 12, 16),
]


def cuda_toolkit() -> Path | None:
    for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root and (Path(root) / "include" / "cuda_runtime.h").is_file():
            return Path(root)
    return None


@pytest.fixture(scope="module")
def emulator(tmp_path_factory) -> Path:
    root, gxx = cuda_toolkit(), shutil.which("g++")
    if root is None or gxx is None:
        pytest.skip("no CUDA headers or no g++: the kernels cannot be compiled for the host")
    libs = [p for p in (root / "lib64", root / "lib") if (p / "libcudart_static.a").is_file()]
    if not libs:
        pytest.skip("no libcudart_static.a in the CUDA toolkit")
    exe = tmp_path_factory.mktemp("emu") / "kernels_emu"
    cmd = [gxx, "-std=c++20", "-O1", "-ffp-contract=off", "-w", f"-I{root / 'include'}", str(EMU / "kernels_emu.cpp"),
           "-o", str(exe), f"-L{libs[0]}", "-lcudart_static", "-ldl", "-lpthread", "-lrt"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    return exe


def weights(rng, qtype: Q, rows: int, K: int) -> np.ndarray:
    if qtype == Q.Q4_0:  # random_gguf has no Q4_0: random bytes under one small f16 scale per block
        be, bb = gguf.GGML_QUANT_SIZES[qtype]
        blk = rng.integers(0, 256, size=(rows * K // be, bb), dtype=np.uint8)
        blk[:, 0:2] = np.full(len(blk), 0.02, "<f2").view(np.uint8).reshape(-1, 2)
        return blk.reshape(rows, -1)
    return random_gguf.random_blocks(rng, qtype, rows, K, 1.0 / np.sqrt(K))


@pytest.mark.parametrize("qtype,pair,dual,rows,K,T,lpr", CASES, ids=lambda v: getattr(v, "name", str(v)))
def test_tensor_core_kernel_matches_the_one_token_kernel(emulator, tmp_path, qtype, pair, dual, rows, K, T, lpr):
    rng = np.random.default_rng(rows * K + T)
    ablk = ABLK.get(qtype, 32)
    R = T * pair
    W = weights(rng, qtype, rows, K)
    W2 = weights(rng, qtype, rows, K) if dual else None
    q = rng.integers(-127, 128, size=(R, K), dtype=np.int8)
    d = rng.uniform(0.001, 0.02, size=(R, K // ablk)).astype(np.float32)
    s = q.reshape(R, K // UNIT, UNIT).astype(np.int32).sum(axis=2, dtype=np.int32)
    bias = rng.uniform(-0.1, 0.1, size=rows).astype(np.float32)
    src, dst = tmp_path / "in.bin", tmp_path / "out.bin"
    src.write_bytes(b"".join(x.tobytes() for x in (W, W2, q, d, s, bias) if x is not None))
    out = subprocess.run([str(emulator), str(TYPE_ID[qtype]), str(pair), str(int(dual)), str(rows), str(K), str(T),
                          str(lpr), str(src), str(dst)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    y1, y8, ym = np.fromfile(dst, np.float32).reshape(3, T, rows)

    for name, y in (("8-token dp4a", y8), ("tensor-core", ym)):
        diff = np.argwhere(y.view(np.uint32) != y1.view(np.uint32))
        assert diff.size == 0, f"{name} kernel differs from the one-token kernel at (token, row) {diff[:8].tolist()}"

    # The values themselves: gguf's dequantized weights times the dequantized activation records.
    x = (q.astype(np.float64) * np.repeat(d.astype(np.float64), ablk, axis=1)).reshape(T, pair, K).sum(axis=1)
    def product(w):
        return x @ gguf.quants.dequantize(w.reshape(-1), qtype).reshape(rows, K).astype(np.float64).T
    if dual:
        g, u = product(W), product(W2)
        ref = g / (1.0 + np.exp(-g)) * u
    else:
        ref = product(W) + bias
    scale = np.abs(ref).max()
    err = np.abs(y1 - ref).max() / scale
    assert err < REL_TOL, f"one-token kernel vs dequantized reference: max error {err:.2e} of the largest value {scale:.3g}"


@pytest.mark.parametrize("E,T,ablk,pair", [(1536, 3, 256, 2), (896, 2, 32, 2), (576, 2, 32, 1), (2560, 1, 256, 2)])
def test_rmsnorm_quantize_kernel(emulator, tmp_path, E, T, ablk, pair):
    """The fused RMSNorm + quantizer: the normalized rows match numpy's, and the records are exactly the
    quantization rule (prepare_acts on the CPU) applied to the rows the kernel wrote: q = round-half-even
    of x * (127 / amax) clamped to 127, d = amax / 127, s the sums of q per 32; the second record (q8x2)
    quantizes x - d q, unfused. E = 2560 takes a warp two spans (the weights read again, not preloaded)."""
    rng = np.random.default_rng(E + T)
    x = (rng.standard_normal((T, E)) * rng.uniform(0.1, 20.0, size=(T, 1))).astype(np.float32)
    x[:, 7] *= 50.0  # an outlier dimension, as qwen2 has
    w = rng.uniform(0.5, 1.5, size=E).astype(np.float32)
    src, dst = tmp_path / "in.bin", tmp_path / "out.bin"
    src.write_bytes(x.tobytes() + w.tobytes())
    out = subprocess.run([str(emulator), "norm", str(E), str(T), str(ablk), str(pair), str(src), str(dst)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    raw = dst.read_bytes()
    R = T * pair
    sizes = [T * E * 4, R * E, R * E // ablk * 4, R * E // UNIT * 4]
    parts, off = [], 0
    for n in sizes:
        parts.append(raw[off:off + n])
        off += n
    assert off == len(raw)
    xb = np.frombuffer(parts[0], np.float32).reshape(T, E)
    q = np.frombuffer(parts[1], np.int8).reshape(T, pair, E)
    d = np.frombuffer(parts[2], np.float32).reshape(T, pair, E // ablk)
    s = np.frombuffer(parts[3], np.int32).reshape(T, pair, E // UNIT)

    x64 = x.astype(np.float64)
    ref = x64 / np.sqrt((x64 * x64).mean(axis=1, keepdims=True) + 1e-6) * w
    assert np.abs(xb - ref).max() <= 1e-5 * np.abs(ref).max()

    r = xb.reshape(T, E // ablk, ablk).copy()
    for k in range(pair):
        amax = np.abs(r).max(axis=2, keepdims=True)
        inv = np.where(amax > 0, np.float32(127.0) / np.where(amax > 0, amax, 1), np.float32(0)).astype(np.float32)
        dd = (amax / np.float32(127.0)).astype(np.float32)
        v = np.clip(np.rint(r * inv), -127, 127).astype(np.float32)
        np.testing.assert_array_equal(q[:, k].reshape(r.shape), v.astype(np.int8), err_msg=f"record {k} values")
        np.testing.assert_array_equal(d[:, k], dd[..., 0], err_msg=f"record {k} scales")
        np.testing.assert_array_equal(s[:, k], v.reshape(T, E // UNIT, UNIT).sum(axis=2).astype(np.int32))
        r = (r - dd * v).astype(np.float32)


def rotate(x: np.ndarray, r, theta: np.ndarray, neox: bool) -> np.ndarray:
    """RoPE of the last axis by rotation index r (cos/sin of the double angle rounded to float, as
    fill_rope_row and the kernels' rot_cs do), in float64."""
    c = np.cos(np.multiply.outer(np.asarray(r, np.float64), theta)).astype(np.float32).astype(np.float64)
    s = np.sin(np.multiply.outer(np.asarray(r, np.float64), theta)).astype(np.float32).astype(np.float64)
    half = theta.size
    ia, ib = (np.arange(half), np.arange(half) + half) if neox else (2 * np.arange(half), 2 * np.arange(half) + 1)
    out = x.astype(np.float64).copy()
    a, b = x[..., ia].astype(np.float64), x[..., ib].astype(np.float64)
    out[..., ia] = a * c - b * s
    out[..., ib] = a * s + b * c
    return out


# (n_head, n_head_kv, head_dim, neox, capacity, n positions, T, first query position, its rotation index)
ATTN_CASES = [(12, 2, 128, True, 300, 150, 5, 145, 182), (9, 3, 64, False, 96, 70, 3, 67, 72),
              (14, 2, 64, True, 64, 33, 1, 32, 40)]
N_SINK = 4


@pytest.mark.parametrize("n_head,n_head_kv,hd,neox,cap,n,T,pos0,rot0", ATTN_CASES)
def test_attention_kernels(emulator, tmp_path, n_head, n_head_kv, hd, neox, cap, n, T, pos0, rot0):
    """K/V store, chunk partials and combine: keys rotated once by their rotation index (p here), queries
    by their own rotation index for ring keys and by their position for the sinks, values in fp16; GQA.
    The chunk's output equals token-by-token attention and the every-chunk grid (the decode graph's) bit
    for bit, and a float64 softmax attention to 1e-5 of its largest value."""
    rng = np.random.default_rng(n + T)
    kv_dim, E = n_head_kv * hd, n_head * hd
    k = (rng.standard_normal((n, kv_dim)) * 2 + rng.uniform(-50, 50, kv_dim)).astype(np.float32)  # with a bias
    v = rng.standard_normal((n, kv_dim)).astype(np.float32)
    q = rng.standard_normal((T, E)).astype(np.float32)
    theta = 1e6 ** (-2.0 * np.arange(hd // 2) / hd)
    pos = np.arange(cap, dtype=np.float64)
    rc = np.cos(np.multiply.outer(pos, theta)).astype(np.float32)
    rs = np.sin(np.multiply.outer(pos, theta)).astype(np.float32)
    src, dst = tmp_path / "in.bin", tmp_path / "out.bin"
    src.write_bytes(b"".join(x.tobytes() for x in (k, v, q, theta.astype(np.float64), rc, rs)))
    args = [n_head, n_head_kv, hd, int(neox), cap, n, T, pos0, rot0, N_SINK]
    out = subprocess.run([str(emulator), "attn", *map(str, args), str(src), str(dst)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    oa, ob, oc = np.fromfile(dst, np.float32).reshape(3, T, E)
    assert np.array_equal(oa.view(np.uint32), ob.view(np.uint32)), "launching every chunk of the cache changed values"
    assert np.array_equal(oa.view(np.uint32), oc.view(np.uint32)), "the chunk differs from token-by-token attention"

    G = n_head // n_head_kv
    kr = rotate(k.reshape(n, n_head_kv, hd), np.arange(n)[:, None], theta, neox).astype(np.float32)
    v16 = v.reshape(n, n_head_kv, hd).astype(np.float16).astype(np.float64)
    ref = np.empty((T, n_head, hd))
    for t in range(T):
        p_t = pos0 + t
        for h in range(n_head):
            qh = q[t, h * hd:(h + 1) * hd]
            q_ring, q_sink = rotate(qh, rot0 + t, theta, neox), rotate(qh, p_t, theta, neox)
            keys = kr[:p_t + 1, h // G].astype(np.float64)
            sc = np.where(np.arange(p_t + 1) < N_SINK, keys @ q_sink, keys @ q_ring) / np.sqrt(hd)
            w = np.exp(sc - sc.max())
            ref[t, h] = (w / w.sum()) @ v16[:p_t + 1, h // G]
    ref = ref.reshape(T, E)
    err = np.abs(oa - ref).max() / np.abs(ref).max()
    assert err < 1e-5, f"attention vs float64 reference: max error {err:.2e}"

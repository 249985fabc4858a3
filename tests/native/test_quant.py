"""native/quant.*: dequantizers bit-exact vs gguf.quants, matmul accuracy vs a float64
reference, SIMD == scalar, and batch invariance (y[t][r] independent of T and of r0/r1)."""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType as QT
from gguf import GGUFReader, quants
from gguf.constants import GGML_QUANT_SIZES

from gateway import _native as nat

ALL_TYPES = [QT.F32, QT.F16, QT.BF16, QT.Q4_0, QT.Q4_1, QT.Q5_0, QT.Q5_1, QT.Q8_0, QT.Q4_K, QT.Q5_K, QT.Q6_K]
# Byte offsets of the fp16 scale fields in each block (random bytes there could be inf/NaN).
FP16_FIELDS = {QT.Q4_0: [0], QT.Q4_1: [0, 2], QT.Q5_0: [0], QT.Q5_1: [0, 2], QT.Q8_0: [0],
               QT.Q4_K: [0, 2], QT.Q5_K: [0, 2], QT.Q6_K: [208]}
ROWS_PER_TENSOR = 96
HEADER = 64  # bytes of the activation buffer header (precision, type, K, T)  # rows taken from each real tensor: enough blocks, fast on 2 cores

# (model fixture, tensor) pairs covering every type the three models use.
REAL_TENSORS = [
    ("smollm_path", "token_embd.weight"),        # Q8_0
    ("smollm_path", "blk.0.ffn_down.weight"),    # Q4_1
    ("qwen05_path", "blk.0.attn_q.weight"),      # Q5_0
    ("qwen05_path", "blk.0.attn_v.weight"),      # Q8_0
    ("qwen05_path", "blk.0.ffn_down.weight"),    # Q6_K
    ("qwen05_path", "blk.0.attn_output.weight"),  # Q5_0, K = 896
    ("qwen15_path", "blk.0.attn_q.weight"),      # Q4_K
    ("qwen15_path", "blk.0.ffn_down.weight"),    # Q6_K, K = 8960
    ("qwen15_path", "output.weight"),            # Q6_K
]


def random_blocks(qt: QT, n_rows: int, K: int, rng: np.random.Generator) -> np.ndarray:
    """Raw bytes [n_rows, row_bytes] of random blocks of type qt, with finite fp16 scales."""
    be, bb = GGML_QUANT_SIZES[qt]
    if qt == QT.F32:
        return rng.standard_normal((n_rows, K), dtype=np.float32).view(np.uint8)
    if qt == QT.F16:
        return rng.standard_normal((n_rows, K)).astype(np.float16).view(np.uint8)
    if qt == QT.BF16:
        return (rng.standard_normal((n_rows, K)).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).view(np.uint8)
    blocks = rng.integers(0, 256, size=(n_rows * K // be, bb), dtype=np.uint8)
    for off in FP16_FIELDS[qt]:
        scale = (rng.standard_normal(blocks.shape[0]) * 0.01).astype(np.float16)
        blocks[:, off:off + 2] = scale.view(np.uint8).reshape(-1, 2)
    return blocks.reshape(n_rows, -1)


def deq_ref(qt: QT, raw: np.ndarray, K: int) -> np.ndarray:
    if qt == QT.F32:
        return raw.view(np.float32).reshape(-1, K)
    if qt == QT.F16:
        return raw.view(np.float16).astype(np.float32).reshape(-1, K)
    return quants.dequantize(raw, qt).reshape(-1, K)


@pytest.fixture(scope="module")
def readers(request):
    cache = {}

    def get(fixture: str) -> GGUFReader:
        if fixture not in cache:
            cache[fixture] = GGUFReader(request.getfixturevalue(fixture))
        return cache[fixture]

    return get


def real_tensor(readers, fixture: str, name: str):
    r = readers(fixture)
    t = next(t for t in r.tensors if t.name == name)
    K = int(t.shape[0])
    raw = np.ascontiguousarray(np.asarray(t.data)[:ROWS_PER_TENSOR]).reshape(ROWS_PER_TENSOR, -1).view(np.uint8)
    return QT(t.tensor_type), K, raw


def acts_like(rng: np.random.Generator, T: int, K: int, outliers: float = 1.0) -> np.ndarray:
    """Gaussian activations; `outliers` > 1 scales 4 channels, as transformer hidden states have
    a few massive channels (they coarsen the q8 step of their whole activation block)."""
    x = rng.standard_normal((T, K)).astype(np.float32)
    x[:, rng.integers(0, K, size=4)] *= outliers
    return x


# ---- dequantization -----------------------------------------------------------------------

@pytest.mark.parametrize("qt", ALL_TYPES, ids=lambda q: q.name)
def test_dequantize_random_blocks_bit_exact(qt):
    rng = np.random.default_rng(int(qt))
    raw = random_blocks(qt, 8, 512, rng)
    got = nat.dequantize_row(int(qt), raw.reshape(-1), 8 * 512)
    ref = deq_ref(qt, raw, 512).reshape(-1)
    np.testing.assert_array_equal(got.view(np.uint32), ref.view(np.uint32))


@pytest.mark.models
@pytest.mark.parametrize("fixture,name", REAL_TENSORS)
def test_dequantize_real_tensor_bit_exact(readers, fixture, name):
    qt, K, raw = real_tensor(readers, fixture, name)
    got = nat.dequantize_row(int(qt), raw.reshape(-1), raw.shape[0] * K)
    ref = deq_ref(qt, raw, K).reshape(-1)
    np.testing.assert_array_equal(got.view(np.uint32), ref.view(np.uint32))


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="multiple of 256"):
        nat.dequantize_row(int(QT.Q4_K), np.zeros(144, np.uint8), 100)
    with pytest.raises(ValueError, match="unsupported"):
        nat.dequantize_row(int(QT.IQ2_XXS), np.zeros(66, np.uint8), 256)
    with pytest.raises(ValueError, match="bytes given"):
        nat.dequantize_row(int(QT.Q8_0), np.zeros(33, np.uint8), 32)
    x = np.zeros((1, 256), np.float32)
    acts = nat.prepare_acts(int(QT.Q4_K), x)
    with pytest.raises(ValueError, match="W: .* bytes given"):
        nat.matmul(int(QT.Q4_K), np.zeros(144, np.uint8), 2, acts, x)
    with pytest.raises(ValueError, match="prepared for another call"):
        nat.matmul(int(QT.Q8_0), np.zeros(8 * 34, np.uint8), 1, acts, x)
    # Q6_K shares the K-quant activation format with Q4_K: the same buffer serves both.
    assert nat.matmul(int(QT.Q6_K), np.zeros(210, np.uint8), 1, acts, x).shape == (1, 1)
    with pytest.raises(ValueError, match="precision must be"):
        nat.prepare_acts(int(QT.Q4_K), x, 2)


# ---- matmul -------------------------------------------------------------------------------

def cosines(y: np.ndarray, ref: np.ndarray, rows: int = 32) -> list[float]:
    out = []
    for r in range(0, y.shape[1], rows):
        a, b = y[:, r:r + rows].ravel().astype(np.float64), ref[:, r:r + rows].ravel()
        out.append(float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))))
    return out


# Minimum cosine vs float64 per precision (0 = q8, 1 = q8x2): plain Gaussian acts, and acts
# with 30x outlier channels (they make the q8 step of their blocks 30x coarser).
MIN_COS = {0: (0.9999, 0.999), 1: (0.9999999, 0.999999)}


def check_matmul(qt: QT, K: int, raw: np.ndarray, rng: np.random.Generator, precision: int = 0) -> None:
    n_rows = raw.shape[0]
    W = raw.reshape(-1)
    x16 = acts_like(rng, 16, K)
    acts16 = nat.prepare_acts(int(qt), x16, precision)
    y16 = nat.matmul(int(qt), W, n_rows, acts16, x16)

    # Accuracy against float64 on the exactly dequantized weights, per block of 32 rows.
    ref = x16.astype(np.float64) @ deq_ref(qt, raw, K).astype(np.float64).T
    min_plain, min_outliers = MIN_COS[precision]
    assert min(cosines(y16, ref)) >= min_plain, f"{qt.name}: cosines {cosines(y16, ref)}"
    xo = acts_like(rng, 4, K, outliers=30.0)
    yo = nat.matmul(int(qt), W, n_rows, nat.prepare_acts(int(qt), xo, precision), xo)
    ref_o = xo.astype(np.float64) @ deq_ref(qt, raw, K).astype(np.float64).T
    assert min(cosines(yo, ref_o)) >= min_outliers, f"{qt.name} with outliers: cosines {cosines(yo, ref_o)}"

    # SIMD path == scalar reference, bit for bit.
    ys = nat.matmul_scalar(int(qt), W, n_rows, acts16, x16)
    np.testing.assert_array_equal(y16.view(np.uint32), ys.view(np.uint32))

    # Batch invariance: any T, any row range gives the T=1 bits.
    for T in (1, 2, 3, 4, 5, 6, 8, 9):
        xs = x16[:T]
        y = nat.matmul(int(qt), W, n_rows, nat.prepare_acts(int(qt), xs, precision), xs)
        np.testing.assert_array_equal(y.view(np.uint32), y16[:T].view(np.uint32), err_msg=f"{qt.name} T={T}")
    for r0, r1 in ((0, 1), (5, 38), (n_rows - 7, n_rows)):
        y = nat.matmul(int(qt), W, n_rows, acts16, x16, r0, r1)
        np.testing.assert_array_equal(y[:, r0:r1].view(np.uint32), y16[:, r0:r1].view(np.uint32))
        assert np.isnan(y[:, :r0]).all() and np.isnan(y[:, r1:]).all(), "wrote outside [r0, r1)"


@pytest.mark.parametrize("precision", [0, 1], ids=["q8", "q8x2"])
@pytest.mark.parametrize("qt", ALL_TYPES, ids=lambda q: q.name)
def test_matmul_random_weights(qt, precision):
    rng = np.random.default_rng(100 + int(qt))
    K = 512 if qt not in (QT.F32, QT.F16, QT.BF16) else 200  # float types take any K
    check_matmul(qt, K, random_blocks(qt, 48, K, rng), rng, precision)


@pytest.mark.parametrize("precision", [0, 1], ids=["q8", "q8x2"])
@pytest.mark.parametrize("qt,K", [(QT.Q4_K, 8960), (QT.Q6_K, 8960), (QT.Q6_K, 41 * 256)], ids=["q4k-8960", "q6k-8960", "q6k-10496"])
def test_matmul_long_rows(qt, K, precision):
    """Rows of 35 blocks (the 1.5B's ffn_down, K = 8960) and, for Q6_K, of 41 (past the 40 blocks the
    AVX2 eight-row kernel holds at once), 48 rows: the one-token paths with their prefetches (which run
    past a row's end into the next rows) give the scalar path's bits and the same bits for every T."""
    rng = np.random.default_rng(300)
    check_matmul(qt, K, random_blocks(qt, 48, K, rng), rng, precision)


@pytest.mark.parametrize("precision", [0, 1], ids=["q8", "q8x2"])
@pytest.mark.parametrize("qt", [QT.Q4_K, QT.Q5_K, QT.Q6_K, QT.Q4_0, QT.Q5_0, QT.Q8_0, QT.Q4_1],
                         ids=lambda q: q.name)
def test_matmul_many_vectors(qt, precision):
    """Wide calls (prefill): several 16-vector tiles sharing each weight decode, and a remainder tile
    of up to 8 vectors taken by the other kernel, still give the scalar path's bits and the T=1 bits.
    45 rows: two 16-row passes (the AVX2 Q4_K kernel for many records), one 8-row group, 5 rows left."""
    rng = np.random.default_rng(200 + int(qt))
    K, n_rows = 768, 45
    raw = random_blocks(qt, n_rows, K, rng)
    W = raw.reshape(-1)
    x = acts_like(rng, 70, K, outliers=8.0)
    singles = np.concatenate([nat.matmul(int(qt), W, n_rows, nat.prepare_acts(int(qt), x[t:t + 1], precision),
                                         x[t:t + 1]) for t in range(70)])
    for T in (21, 37, 40, 70):  # records: q8 21, 37, 40, 70 / q8x2 42, 74, 80, 140
        xs = x[:T]
        acts = nat.prepare_acts(int(qt), xs, precision)
        y = nat.matmul(int(qt), W, n_rows, acts, xs)
        np.testing.assert_array_equal(y.view(np.uint32), nat.matmul_scalar(int(qt), W, n_rows, acts, xs).view(np.uint32),
                                      err_msg=f"{qt.name} T={T}: SIMD != scalar")
        np.testing.assert_array_equal(y.view(np.uint32), singles[:T].view(np.uint32), err_msg=f"{qt.name} T={T}")
        y_part = nat.matmul(int(qt), W, n_rows, acts, xs, 5, 17)
        np.testing.assert_array_equal(y_part[:, 5:17].view(np.uint32), y[:, 5:17].view(np.uint32))


@pytest.mark.models
@pytest.mark.parametrize("fixture,name", REAL_TENSORS)
def test_matmul_real_tensor(readers, fixture, name):
    qt, K, raw = real_tensor(readers, fixture, name)
    check_matmul(qt, K, raw, np.random.default_rng(7))


@pytest.mark.models
@pytest.mark.parametrize("fixture,name", [REAL_TENSORS[1], REAL_TENSORS[2], REAL_TENSORS[6], REAL_TENSORS[7]])
def test_matmul_real_tensor_q8x2(readers, fixture, name):
    qt, K, raw = real_tensor(readers, fixture, name)
    check_matmul(qt, K, raw, np.random.default_rng(8), precision=1)


@pytest.mark.parametrize("qt,ablk,group", [(QT.Q4_K, 256, 16), (QT.Q6_K, 256, 16), (QT.Q5_0, 32, 32)],
                         ids=lambda v: getattr(v, "name", str(v)))
def test_prepare_acts_matches_numpy(qt, ablk, group):
    """The q8 activation records equal a numpy float32 reimplementation exactly (values, sums,
    scales), round-half-to-even ties included."""
    rng = np.random.default_rng(3)
    K, T = 512, 3
    x = acts_like(rng, T, K, outliers=30.0)
    x[0, :6] = [127.0, 2.5, -3.5, 0.5, -0.5, 126.5]  # block max 127: x * id is exact, ties round to even
    buf = nat.prepare_acts(int(qt), x, 0)
    stride = nat.act_buffer_bytes(int(qt), K, 1, 0) - HEADER
    assert buf.size == HEADER + T * stride and stride % 64 == 0
    xb = x.reshape(T, K // ablk, ablk)
    amax = np.abs(xb).max(axis=2)
    with np.errstate(divide="ignore"):
        inv = np.where(amax > 0, np.float32(127.0) / amax, np.float32(0.0)).astype(np.float32)
    q = np.clip(np.rint(xb * inv[..., None]), -127, 127).astype(np.int8).reshape(T, K)
    sums = q.reshape(T, -1, group).astype(np.int32).sum(axis=2).astype(np.int16)
    d = (amax / np.float32(127.0)).astype(np.float32)
    sums_off = (K + 15) // 16 * 16
    d_off = sums_off + (sums.shape[1] * 2 + 15) // 16 * 16
    for t in range(T):
        rec = buf[HEADER + t * stride:HEADER + (t + 1) * stride]
        np.testing.assert_array_equal(rec[:K].view(np.int8), q[t])
        np.testing.assert_array_equal(rec[sums_off:sums_off + 2 * sums.shape[1]].view(np.int16), sums[t])
        np.testing.assert_array_equal(rec[d_off:d_off + 4 * d.shape[1]].view(np.float32), d[t])
    assert list(q[0, :6]) == [127, 2, -4, 0, 0, 126]

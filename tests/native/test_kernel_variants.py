"""Every kernel variant of the built module (the calibrated plan's choices, native/quant/variants.cpp)
gives the scalar path's bits on the 1.5B's shapes: Q4_K and Q6_K rows of K = 1536 and 8960, against
1-9 tokens of q8 and q8x2 records, over row ranges that leave row-lane and odd remainders. The selftest
(test_quant_simd_paths.py) does the same for the AVX2 and scalar builds."""

from __future__ import annotations

import numpy as np
import pytest

from gateway import _native as nat

Q4_K, Q6_K = 12, 14
BLOCK = {Q4_K: (144, (0, 2)), Q6_K: (210, (208,))}  # bytes per 256-block, fp16 scale offsets


def weights(rng: np.random.Generator, qt: int, n_rows: int, K: int) -> np.ndarray:
    bb, offs = BLOCK[qt]
    w = rng.integers(0, 256, size=(n_rows * K // 256, bb), dtype=np.uint8)
    for off in offs:  # small normal fp16 scales, so no inf/nan
        w[:, off:off + 2] = (rng.standard_normal(w.shape[0]) * 0.01).astype(np.float16).view(np.uint8).reshape(-1, 2)
    return w.reshape(-1)


@pytest.mark.parametrize("qt", [Q4_K, Q6_K])
@pytest.mark.parametrize("K", [1536, 8960])
def test_every_variant_matches_scalar(qt, K):
    rng = np.random.default_rng(qt * K)
    n_rows = 40
    W = weights(rng, qt, n_rows, K)
    n_checked = 0
    try:
        for precision, per in ((0, 1), (1, 2)):
            for T in (1, 2, 3, 4, 5, 8, 9):
                x = rng.standard_normal((T, K)).astype(np.float32)
                acts = nat.prepare_acts(qt, x, precision)
                n_rec = T * per
                for r0, r1 in ((0, n_rows), (16, 40), (3, 37), (5, 38)):
                    ref = nat.matmul_scalar(qt, W, n_rows, acts, x, r0, r1)
                    names = nat.kernel_variants(qt, K, n_rec)
                    assert names[0] == "static" and len(set(names)) == len(names)
                    for name in names:
                        nat.set_kernel_variant(qt, K, n_rec, name)
                        assert nat.kernel_variant_table() == [(qt, K, n_rec, name)]
                        y = nat.matmul(qt, W, n_rows, acts, x, r0, r1)
                        np.testing.assert_array_equal(y[:, r0:r1].view(np.uint32), ref[:, r0:r1].view(np.uint32),
                                                      err_msg=f"{name} K={K} records={n_rec} rows {r0}:{r1}")
                        n_checked += 1
                    nat.clear_kernel_variants()
    finally:
        nat.clear_kernel_variants()
    if nat.quant_simd_name().startswith("avx") and qt == Q4_K:  # x86: one-token Q4_K has 7 variants
        assert n_checked > 56 * 3  # more than the static plan alone: the variants did run


def test_unknown_variant_is_refused():
    with pytest.raises(ValueError, match="no variant 'nope'"):
        nat.set_kernel_variant(Q4_K, 1536, 2, "nope")
    assert nat.kernel_variant_table() == []
    with pytest.raises(ValueError):
        nat.kernel_variants(Q4_K, 1000, 2)  # K not a multiple of 256

// Internal to the AVX2 kernels: quant_avx2.cpp (K-quants, the old legacy kernel, the dispatch) and
// quant_avx2_legacy.cpp (the legacy row-lane kernel). Holds the row-lane shapes and helpers both use.
#pragma once
#include <cstring>

#include "quant_blocks.h"
#include "quant_kernels.h"

#if LG_SIMD_AVX2
#include <immintrin.h>

namespace lg::avx2 {

constexpr int RL_ROWS = 8;          // rows per row-lane group: one ymm dword lane each
constexpr int RL_MAX_RECORDS = 16;  // records per pass over the rows (their float sums live on the stack)

// r[i] = dword row i in, r[d] lane i = dword d of row i out (an 8x8 transpose).
inline void transpose8(__m256i* r) {
    __m256i t[8], u[8];
    for (int h = 0; h < 2; ++h) {
        __m256i* q = r + 4 * h;
        t[4 * h] = _mm256_unpacklo_epi32(q[0], q[1]);
        t[4 * h + 1] = _mm256_unpackhi_epi32(q[0], q[1]);
        t[4 * h + 2] = _mm256_unpacklo_epi32(q[2], q[3]);
        t[4 * h + 3] = _mm256_unpackhi_epi32(q[2], q[3]);
        u[4 * h] = _mm256_unpacklo_epi64(t[4 * h], t[4 * h + 2]);      // dwords 0 / 4
        u[4 * h + 1] = _mm256_unpackhi_epi64(t[4 * h], t[4 * h + 2]);  // 1 / 5
        u[4 * h + 2] = _mm256_unpacklo_epi64(t[4 * h + 1], t[4 * h + 3]);  // 2 / 6
        u[4 * h + 3] = _mm256_unpackhi_epi64(t[4 * h + 1], t[4 * h + 3]);  // 3 / 7
    }
    for (int k = 0; k < 4; ++k) {
        r[k] = _mm256_permute2x128_si256(u[k], u[4 + k], 0x20);
        r[4 + k] = _mm256_permute2x128_si256(u[k], u[4 + k], 0x31);
    }
}

inline __m256i bcast4(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

// The legacy row-lane kernel (quant_avx2_legacy.cpp) for legacy type wt: takes rows r0 .. r0 + 8n of
// [r0, r1) and returns the first row it left, for legacy_matmul to finish.
int64_t legacy_rowlane_rows(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int T,
                            float* y, int64_t ldy, int pair);

}  // namespace lg::avx2

#endif

// Internal to the AVX2 kernels (avx2.cpp: the reducing K-quant kernels and the dispatch; avx2_rowlane.cpp:
// K-quant row-lane kernels; avx2_legacy.cpp: legacy 32-blocks). Holds the helpers they share and the entries.
#pragma once
#include <cstring>

#include "quant/blocks.h"
#include "quant/kernels.h"
#include "quant/x86/plan.h"

#if LG_SIMD_AVX2
#include <immintrin.h>

namespace lg::quant::avx2 {

// Records per pass over the rows (their float sums live on the stack): each pass decodes every weight block
// again. Measured (x86-64-v3 build on this box, prefill of 512 tokens, 2 threads): 1.5B 78 tok/s with 16,
// 85-86 with 32, 86-90 with 64, 88-89 with 128; 0.5B 239 -> 276 with 64. Bit-identical (records are
// independent sums).
constexpr int ROWLANE_MAX_RECORDS = 64;

constexpr int R_TILE = 8;  // activation vectors per pass of the reducing kernels: one decode of a weight block

inline int32_t hsum128(__m128i s) {
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

inline int32_t hsum(__m256i v) { return hsum128(_mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1))); }

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

// AVX-VNNI (VEX vpdpbusd on ymm: Intel client cores from Alder Lake on, which lack AVX-512): one
// instruction for the 4-product int32 sums that take maddubs + madd/add without it. Compiled in where
// the compiler targets it (-mavxvnni or a -march that has it); the kernels' integers are the same.
// Used by the K-quant row-lane kernels. Measured on this box (Zen 5, which runs it too), x86-64-v3 builds
// with and without -mavxvnni, 1.5B, logits bit-identical: prefill-512 86-89 -> 95-96 tok/s; forward of
// 4 tokens 0.933, 8 tokens 0.922 of the time, 1 token unchanged (separate processes, rotated, 3-4 rounds).
// Not measured on an Intel core.
#if defined(__AVXVNNI__)
#define LG_AVX_VNNI 1
inline __m256i dpbusd(__m256i acc, __m256i u, __m256i s) { return _mm256_dpbusd_avx_epi32(acc, u, s); }
#endif

// The first 16 bytes at p[i] for 8 rows, as 4 dwords each: c[k] lane i = dword k of row i. (Row i goes to
// 128-bit lane 0 of register i % 4 for i < 4, lane 1 for i >= 4, then a 4x4 dword transpose within lanes.)
inline void dwords4_of_rows(const void* const* p, __m256i* c) {
    __m256i h[4];
    for (int i = 0; i < 4; ++i)
        h[i] = _mm256_set_m128i(_mm_loadu_si128(static_cast<const __m128i*>(p[i + 4])),
                                _mm_loadu_si128(static_cast<const __m128i*>(p[i])));
    const __m256i t0 = _mm256_unpacklo_epi32(h[0], h[1]), t1 = _mm256_unpackhi_epi32(h[0], h[1]);
    const __m256i t2 = _mm256_unpacklo_epi32(h[2], h[3]), t3 = _mm256_unpackhi_epi32(h[2], h[3]);
    c[0] = _mm256_unpacklo_epi64(t0, t2);
    c[1] = _mm256_unpackhi_epi64(t0, t2);
    c[2] = _mm256_unpacklo_epi64(t1, t3);
    c[3] = _mm256_unpackhi_epi64(t1, t3);
}

// ---- kernel entries: the dispatch (avx2.cpp) runs them as plan.h says ---------------------------------
// Row-lane kernels: rows r0 .. r0 + 8n of [r0, r1) (K-quants: those of the plan's rows16 and rows8); they
// return the first row left.
int64_t rowlane_kquant(const Plan& p, GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts,
                       int n_rec, float* y, int64_t ldy, int pair);  // avx2_rowlane.cpp
int64_t rowlane_legacy(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec,
                       float* y, int64_t ldy, int pair);  // avx2_legacy.cpp
// The reducing kernel for legacy 32-blocks, rows [r0, r1) (avx2_legacy.cpp).
void reduce_legacy(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec,
                   float* y, int64_t ldy, int pair);


}  // namespace lg::quant::avx2

#endif

// Internal to the AVX-512 kernels (avx512.cpp: the reducing K-quant kernel and the dispatch;
// avx512_rowlane.cpp, avx512_broadcast.cpp: K-quants; avx512_legacy.cpp: legacy 32-blocks). Holds what
// they share: the K-quant block decoders, the reducing kernel's tile and fold, the row-lane transposes,
// the broadcast tiles' stack, and the kernel entries.
#pragma once
#include <cstring>
#include <type_traits>

#include "quant/blocks.h"
#include "quant/kernels.h"
#include "quant/x86/plan.h"

#if LG_SIMD_AVX512
#include <immintrin.h>
// GCC 12 flags the deliberately undefined upper halves inside its own cast intrinsics, and (at -O2)
// the undefined pass-through operand inside its own unpack intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace lg::quant::avx512 {

// ---- K-quant decode -------------------------------------------------------------------------
// A K-quant block as 4 zmm of unsigned values in element order (64 each), and int16 per-16
// scales (and mins, Q4_K/Q5_K) as 16 lanes.
struct KBlock {
    __m512i q[4];
    __m256i sc16, mn16;
    float dw, dm;
};

// int16 lanes 0..15 = a, 16..31 = b (a 16-bit value per 256-bit half).
inline __m512i halves16(int a, int b) {
    return _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16(short(a)), _mm512_set1_epi16(short(b)));
}

inline __m256i dup8_to16(__m128i x8) {  // 8 int16 -> 16 int16, each twice
    return _mm256_set_m128i(_mm_unpackhi_epi16(x8, x8), _mm_unpacklo_epi16(x8, x8));
}

// The 8 six-bit scales and 8 mins of a Q4_K/Q5_K block, one byte each (sub-block j in byte j).
inline void q4k_unpack(const uint8_t* s, uint64_t* sc, uint64_t* mn) {
    uint32_t a, b, c;
    std::memcpy(&a, s, 4);
    std::memcpy(&b, s + 4, 4);
    std::memcpy(&c, s + 8, 4);
    *sc = (a & 0x3f3f3f3fu) | (uint64_t((c & 0x0f0f0f0fu) | ((a >> 2) & 0x30303030u)) << 32);
    *mn = (b & 0x3f3f3f3fu) | (uint64_t(((c >> 4) & 0x0f0f0f0fu) | ((b >> 2) & 0x30303030u)) << 32);
}

inline void q4k_scales(const uint8_t* s, KBlock* o) {
    uint64_t sc, mn;
    q4k_unpack(s, &sc, &mn);
    o->sc16 = dup8_to16(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(sc))));
    o->mn16 = dup8_to16(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(mn))));
}

// Nibbles of 64 bytes of qs (two 32-byte chunks j, j+1) -> values of sub-blocks 2j..2j+3.
inline void q4k_nibbles(const uint8_t* qs, __m512i* q0, __m512i* q1) {
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    __m512i z = _mm512_loadu_si512(qs);
    __m512i lo = _mm512_and_si512(z, m4), hi = _mm512_and_si512(_mm512_srli_epi16(z, 4), m4);
    *q0 = _mm512_shuffle_i64x2(lo, hi, _MM_SHUFFLE(1, 0, 1, 0));
    *q1 = _mm512_shuffle_i64x2(lo, hi, _MM_SHUFFLE(3, 2, 3, 2));
}

// The 256 stored values of a Q4_K/Q5_K block into q[0..3] (element order).
inline void k4_values(const BlockQ4K* b, __m512i* q) {
    q4k_nibbles(b->qs, &q[0], &q[1]);
    q4k_nibbles(b->qs + 64, &q[2], &q[3]);
}

inline void k4_values(const BlockQ5K* b, __m512i* q) {
    q4k_nibbles(b->qs, &q[0], &q[1]);
    q4k_nibbles(b->qs + 64, &q[2], &q[3]);
    // Fifth bit of element 32j + l is bit j of qh[l]; q[k] holds sub-blocks 2k (low half), 2k+1.
    const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh)));
    const __m512i one = _mm512_set1_epi8(1);
    for (int k = 0; k < 4; ++k) {
        const __m512i sh = halves16(2 * k, 2 * k + 1);
        __m512i bit = _mm512_and_si512(_mm512_srlv_epi16(qh, sh), one);
        q[k] = _mm512_or_si512(q[k], _mm512_slli_epi16(bit, 4));
    }
}

template <typename B>
inline void decode(const B* b, KBlock* o) {
    static_assert(std::is_same<B, BlockQ4K>::value || std::is_same<B, BlockQ5K>::value, "Q4_K or Q5_K");
    o->dw = _cvtsh_ss(b->d);
    o->dm = _cvtsh_ss(b->dmin);
    q4k_scales(b->scales, o);
    k4_values(b, o->q);
}

inline void decode(const BlockQ6K* b, KBlock* o) {
    o->dw = _cvtsh_ss(b->d);
    o->dm = 0.0f;
    o->sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b->scales)));
    o->mn16 = _mm256_setzero_si256();
    const __m512i m4 = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
    // Element 128h + w: low nibble of ql[64h + w%64] (high nibble for w >= 64), bits 2*(w/32)
    // of qh[32h + w%32] as bits 4..5.
    const __m512i sh_lo = halves16(4, 2);  // w/32 = 0, 1
    const __m512i sh_hi = halves16(0, 2);  // w/32 = 2, 3
    for (int h = 0; h < 2; ++h) {
        __m512i ql = _mm512_loadu_si512(b->ql + 64 * h);
        __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh + 32 * h)));
        __m512i hlo = _mm512_and_si512(_mm512_sllv_epi16(qh, sh_lo), m30);
        __m512i hhi = _mm512_and_si512(_mm512_srlv_epi16(qh, sh_hi), m30);
        o->q[2 * h] = _mm512_or_si512(_mm512_and_si512(ql, m4), hlo);
        o->q[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4), hhi);
    }
}

// ---- per-tile activation tables ---------------------------------------------------------------
// dxT[b][t]: block scales transposed; bsT[b][z]: the per-16 sums of vector t, arranged so that
// int32 lane 8*(kp%2) + t of madd(bsT[b][z], pairs) pairs sums k = 2kp, 2kp+1 (kp = 2z + lane/8).
struct ReduceTile {
    alignas(64) float dxT[REDUCE_MAX_KBLOCKS][R_TILE];
    alignas(64) int16_t bsT[REDUCE_MAX_KBLOCKS][4][32];
    const int8_t* xq[R_TILE];
};

// Fills the tile with records t0 .. t0 + nt (nt <= R_TILE) of a prepared K-quant buffer.
void reduce_build_tile(const uint8_t* acts, const ActLayout& L, int64_t nb, int t0, int nt, ReduceTile* tile);
// The reducing kernel for K-quant type wt: rows [r0, r1) of W (nb blocks per row) against a built tile.
void reduce_kquant_tile(GGMLType wt, const uint8_t* W, int64_t nb, int64_t r0, int64_t r1, const ReduceTile& tile, int t0, int nt,
                 float* y, int64_t ldy, int pair);

// ---- row-lane helpers (avx512_rowlane.cpp, avx512_legacy.cpp) ------------------------
// The first 16 bytes at p[i] for 16 rows, as 4 dwords each: c[k] lane i = dword k of row i. (Row 4L + q
// goes to 128-bit lane L of register q, then a 4x4 dword transpose within lanes.)
inline void dwords4_of_rows(const void* const* p, __m512i* c) {
    __m512i h[4];
    for (int q = 0; q < 4; ++q) {
        __m512i z = _mm512_zextsi128_si512(_mm_loadu_si128(static_cast<const __m128i*>(p[q])));
        z = _mm512_inserti32x4(z, _mm_loadu_si128(static_cast<const __m128i*>(p[4 + q])), 1);
        z = _mm512_inserti32x4(z, _mm_loadu_si128(static_cast<const __m128i*>(p[8 + q])), 2);
        h[q] = _mm512_inserti32x4(z, _mm_loadu_si128(static_cast<const __m128i*>(p[12 + q])), 3);
    }
    const __m512i t0 = _mm512_unpacklo_epi32(h[0], h[1]), t1 = _mm512_unpackhi_epi32(h[0], h[1]);
    const __m512i t2 = _mm512_unpacklo_epi32(h[2], h[3]), t3 = _mm512_unpackhi_epi32(h[2], h[3]);
    c[0] = _mm512_unpacklo_epi64(t0, t2);
    c[1] = _mm512_unpackhi_epi64(t0, t2);
    c[2] = _mm512_unpacklo_epi64(t1, t3);
    c[3] = _mm512_unpackhi_epi64(t1, t3);
}

// acc += dpbusd(u, 4 int8 at p broadcast): the broadcast folded into the instruction ({1to16}),
// which GCC does not do by itself.
inline __m512i dpbusd_bcast(__m512i acc, __m512i u, const int32_t* p) {
    asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u), "m"(*p));
    return acc;
}

// ---- reducing kernels: the fold of 8 accumulators (avx512.cpp, avx512_legacy.cpp) -----------------
// b[i] = [8-lane partial of accumulator 2i (chunks 0,1) | of accumulator 2i+1 (chunks 2,3)];
// result lane j = total of accumulator j (j < 8).
inline __m256i reduce_pairs(const __m512i b[4]) {
    __m512i c[2];
    for (int i = 0; i < 2; ++i) {  // 128-bit chunk k = 4-lane partial of accumulator 4i+k
        __m512i u = _mm512_shuffle_i64x2(b[2 * i], b[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0));
        __m512i v = _mm512_shuffle_i64x2(b[2 * i], b[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1));
        c[i] = _mm512_add_epi32(u, v);
    }
    // chunk k: lanes [c0.l0+c0.l2, c1.l0+c1.l2, c0.l1+c0.l3, c1.l1+c1.l3]
    __m512i d = _mm512_add_epi32(_mm512_unpacklo_epi32(c[0], c[1]), _mm512_unpackhi_epi32(c[0], c[1]));
    __m512i e = _mm512_add_epi32(d, _mm512_shuffle_epi32(d, _MM_PERM_BADC));  // lane0: acc k, lane1: acc 4+k
    const __m512i idx = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_castsi512_si256(_mm512_permutexvar_epi32(idx, e));
}

// ---- broadcast tiles (avx512_broadcast.cpp, avx512_legacy.cpp) ----------------------------------
// xq[g][t] = bytes 4g..4g+3 (int8) of record t0 + t for t < nt, zero for the tile's other vectors.
inline void transpose_records(const uint8_t* acts, int64_t stride, int t0, int nt, int64_t ng, uint32_t (*xq)[16]) {
    for (int t = 0; t < nt; ++t) {
        const uint8_t* rec = acts + static_cast<int64_t>(t0 + t) * stride;
        for (int64_t g = 0; g < ng; ++g) std::memcpy(&xq[g][t], rec + 4 * g, 4);
    }
    for (int t = nt; t < 16; ++t)
        for (int64_t g = 0; g < ng; ++g) xq[g][t] = 0;
}

// Tiles built at once and swept per decoded row group (see broadcast_rows), at most this many, as many as fit
// with the decoded row group in BROADCAST_STACK_BYTES. tuned: docs/perf/2026-11-30-avx512-kernels.md#broadcast-tile-group
constexpr int BROADCAST_TILE_GROUP = 4;
// Stack for a call's tiles and decoded row group: threads may have as little as 1 MB (a prefill on a 1 MB
// thread is tested in tests/native/test_engine.py). Sized: docs/perf/2026-11-30-avx512-kernels.md#broadcast-stack
constexpr int64_t BROADCAST_STACK_BYTES = 512 << 10;

// Tiles per decode for a call of n_tiles: up to BROADCAST_TILE_GROUP, as many as fit in BROADCAST_STACK_BYTES together
// with the decoded row group (needed only from two tiles on).
inline int tiles_per_decode(int n_tiles, int64_t tile_bytes, int64_t dec_bytes) {
    int tg = 1;
    if (n_tiles > 1)
        while (tg < BROADCAST_TILE_GROUP && (tg + 1) * tile_bytes + dec_bytes <= BROADCAST_STACK_BYTES) ++tg;
    return tg;
}

// ---- kernel entries: the dispatch (avx512.cpp) runs them as plan.h says ---------------------------
// Row-lane kernels: rows r0 .. r0 + 16n of [r0, r1); they return the first row left.
int64_t rowlane_kquant(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec,
                       float* y, int64_t ldy, int pair, RowlaneMode mode = RowlaneMode::plan);  // avx512_rowlane.cpp
int64_t rowlane_legacy(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec,
                       float* y, int64_t ldy, int pair);  // avx512_legacy.cpp
// The one-token reducing kernel for Q4_K and Q6_K, rows [r0, r1), 1-2 records (avx512_reduce1.cpp).
void reduce1_kquant(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec, float* y,
                    int64_t ldy, int pair);
// Broadcast kernels, rows [r0, r1): G (1, 2 or 4) lanes per record.
void broadcast_kquant(GGMLType wt, int G, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts,
                      int n_rec, float* y, int64_t ldy, int pair);  // avx512_broadcast.cpp
void broadcast_legacy(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec,
                      float* y, int64_t ldy, int pair);  // avx512_legacy.cpp
// The reducing kernel for legacy 32-blocks, rows [r0, r1) (avx512_legacy.cpp).
void reduce_legacy(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec,
                   float* y, int64_t ldy, int pair);

}  // namespace lg::quant::avx512

#endif

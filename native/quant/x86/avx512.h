// Internal to the AVX-512 kernels: quant_avx512.cpp (the reducing kernels and the dispatch),
// quant_avx512_broadcast.cpp (wide calls) and the row-lane files (_rowlane, _legacy). Holds what they
// share: the block decoders, the reducing kernel's tile, the row-lane transposes.
#pragma once
#include <cstring>
#include <type_traits>

#include "quant/blocks.h"
#include "quant/kernels.h"

#if LG_SIMD_AVX512
#include <immintrin.h>
// GCC 12 flags the deliberately undefined upper halves inside its own cast intrinsics, and (at -O2)
// the undefined pass-through operand inside its own unpack intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace lg::quant::avx512 {

constexpr int R_TILE = 8;         // activation vectors per pass of the reducing kernel: one lane each
constexpr int REDUCE_MAX_KBLOCKS = 128;  // K <= 32768 for K-quants (per-tile tables live on the stack)

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

// ---- legacy 32-blocks (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) -----------------------------------------
// A group of up to 8 blocks: q[z] holds blocks 2z, 2z+1 as unsigned values (32 each, element
// order), so that dpbusd with the activations gives per-block partials in reduce_pairs form.
struct LegacyGroup {
    __m512i q[4];
    __m256 dw, dm;
};

template <GGMLType WT> struct LegacyBlock;
template <> struct LegacyBlock<GGMLType::Q4_0> { using B = BlockQ4_0; static constexpr int off_shift = 3; };
template <> struct LegacyBlock<GGMLType::Q4_1> { using B = BlockQ4_1; static constexpr int off_shift = 0; };
template <> struct LegacyBlock<GGMLType::Q5_0> { using B = BlockQ5_0; static constexpr int off_shift = 4; };
template <> struct LegacyBlock<GGMLType::Q5_1> { using B = BlockQ5_1; static constexpr int off_shift = 0; };
template <> struct LegacyBlock<GGMLType::Q8_0> { using B = BlockQ8_0; static constexpr int off_shift = 7; };

template <typename B>
inline uint64_t qh_pair(const B* b, int i, int n) {  // fifth bits of blocks i, i+1 (if present)
    uint32_t lo, hi = 0;
    std::memcpy(&lo, b[i].qh, 4);
    if (i + 1 < n) std::memcpy(&hi, b[i + 1].qh, 4);
    return lo | (uint64_t(hi) << 32);
}

template <GGMLType WT>
inline void decode_legacy_group(const typename LegacyBlock<WT>::B* b, int n, LegacyGroup* g) {
    alignas(16) uint16_t d[8] = {}, m[8] = {};
    for (int i = 0; i < n; ++i) {
        d[i] = b[i].d;
        if constexpr (WT == GGMLType::Q4_1 || WT == GGMLType::Q5_1) m[i] = b[i].m;
    }
    g->dw = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(d)));
    g->dm = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(m)));
    if constexpr (WT == GGMLType::Q8_0) {
        const __m256i flip = _mm256_set1_epi8(char(0x80));  // int8 w -> uint8 w + 128
        for (int z = 0; z < 4; ++z) {
            __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
            if (2 * z < n) lo = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[2 * z].qs)), flip);
            if (2 * z + 1 < n) hi = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[2 * z + 1].qs)), flip);
            g->q[z] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
        }
    } else {
        const __m512i m4 = _mm512_set1_epi8(0x0f);
        const __m512i order = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);  // [B lo, B hi, B' lo, B' hi]
        for (int h = 0; h < 2; ++h) {
            __m128i c[4];
            for (int i = 0; i < 4; ++i) {
                const int blk = 4 * h + i;
                c[i] = blk < n ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[blk].qs)) : _mm_setzero_si128();
            }
            __m512i z = _mm512_inserti32x4(_mm512_castsi128_si512(c[0]), c[1], 1);
            z = _mm512_inserti32x4(_mm512_inserti32x4(z, c[2], 2), c[3], 3);
            const __m512i lo = _mm512_and_si512(z, m4), hi = _mm512_and_si512(_mm512_srli_epi16(z, 4), m4);
            g->q[2 * h] = _mm512_permutex2var_epi64(lo, order, hi);
            g->q[2 * h + 1] = _mm512_permutex2var_epi64(lo, _mm512_add_epi64(order, _mm512_set1_epi64(4)), hi);
            if constexpr (WT == GGMLType::Q5_0 || WT == GGMLType::Q5_1) {
                const __m512i bit4 = _mm512_set1_epi8(0x10);
                for (int j = 0; j < 2; ++j) {
                    const int blk = 4 * h + 2 * j;
                    if (blk < n)
                        g->q[2 * h + j] = _mm512_or_si512(g->q[2 * h + j], _mm512_maskz_mov_epi8(qh_pair(b, blk, n), bit4));
                }
            }
        }
    }
}

// ---- row-lane helpers (quant_avx512_rowlane.cpp, quant_avx512_legacy.cpp) ------------------------
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

// The broadcast kernels (quant_avx512_broadcast.cpp) for calls of many records; false when the call
// is not theirs (too few records, another type, K too large), and the reducing kernels run.
bool broadcast_kquant(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec,
                      float* y, int64_t ldy, int pair);

// The row-lane kernels (quant_avx512_rowlane.cpp) for Q4_K calls of up to ROWLANE_MAX_RECORDS records and
// Q6_K calls of 12 to ROWLANE_MAX_RECORDS:
// takes rows r0 .. r0 + 16n of [r0, r1) and returns the first row it left (r0 when the call is not
// its own), for the other kernels to finish.
constexpr int ROWLANE_MAX_RECORDS = 16;
int64_t rowlane_legacy(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts,
                              int n_rec, float* y, int64_t ldy, int pair);  // the same for legacy 32-blocks, any n_rec <= ROWLANE_MAX_RECORDS
                                                                        // (quant_avx512_legacy.cpp); r0 for other types
int64_t rowlane_kquant(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec,
                       float* y, int64_t ldy, int pair);

}  // namespace lg::quant::avx512

#endif

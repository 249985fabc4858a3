// x86 AVX2 kernels for CPUs without AVX-512 VNNI: integer block sums with maddubs/madd, float
// steps in scalar code in the canonical order of blocks.h, so results are bit-identical to
// scalar.cpp. Weight-stationary: a block is decoded once per tile of vectors. No threads. The K-quant
// kernels and the dispatch (matmul_simd) are here; the legacy 32-block kernels in avx2_legacy.cpp.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "quant/x86/avx2.h"

#if LG_SIMD_AVX2

namespace lg::quant::avx2 {

namespace {

// ---- K-quants -------------------------------------------------------------------------------
// q[k]: unsigned values of elements 32k..32k+31; sv[k]: int16 scale vector for maddubs output
// of q[k] (lanes 0..7: per-16 scale 2k, lanes 8..15: 2k+1).
struct KBlock {
    __m256i q[8], sv[8];
    __m256i sc16;  // Q6_K: the 16 scales as int16 (the offset term's partner in madd)
    __m128i mn16;  // Q4_K/Q5_K: the 8 mins as int16 (the activation sums' partner in madd)
    float dw, dm;
};

// sv[k] from the int16 scales of a 16-lane vector s16 (lane i = scale of elements 16i..16i+15):
// lanes 0..7 = s16 lane 2k, lanes 8..15 = lane 2k + 1.
inline void scales_from16(__m256i s16, KBlock* o) {
    const __m256i lo = _mm256_permute2x128_si256(s16, s16, 0x00), hi = _mm256_permute2x128_si256(s16, s16, 0x11);
    for (int k = 0; k < 8; ++k) {
        const int a = (2 * k) % 8, b = (2 * k + 1) % 8;  // int16 lanes within the 128-bit half
        const __m256i idx = _mm256_setr_epi8(2 * a, 2 * a + 1, 2 * a, 2 * a + 1, 2 * a, 2 * a + 1, 2 * a, 2 * a + 1, 2 * a,
                                             2 * a + 1, 2 * a, 2 * a + 1, 2 * a, 2 * a + 1, 2 * a, 2 * a + 1, 2 * b, 2 * b + 1,
                                             2 * b, 2 * b + 1, 2 * b, 2 * b + 1, 2 * b, 2 * b + 1, 2 * b, 2 * b + 1, 2 * b,
                                             2 * b + 1, 2 * b, 2 * b + 1, 2 * b, 2 * b + 1);
        o->sv[k] = _mm256_shuffle_epi8(k < 4 ? lo : hi, idx);
    }
}

// The 8 scales and 8 mins of a Q4_K/Q5_K block (q4k_scale_min for all j at once): with the 12 bytes as
// dwords u0, u1, u2, scales 0-3 = u0 & 63 (per byte), mins 0-3 = u1 & 63, scales 4-7 = (u2 & 15) |
// (u0 >> 6) << 4, mins 4-7 = (u2 >> 4 & 15) | (u1 >> 6) << 4.
inline void q4k_common(uint16_t d, uint16_t dmin, const uint8_t* scales, const uint8_t* qs, KBlock* o) {
    o->dw = _cvtsh_ss(d);
    o->dm = _cvtsh_ss(dmin);
    uint32_t u[3];
    std::memcpy(u, scales, 12);
    const uint32_t m6 = 0x3f3f3f3fu, k4 = 0x0f0f0f0fu, m2 = 0x03030303u;
    const uint32_t sc_lo = u[0] & m6, mn_lo = u[1] & m6;
    const uint32_t sc_hi = (u[2] & k4) | (((u[0] >> 6) & m2) << 4), mn_hi = ((u[2] >> 4) & k4) | (((u[1] >> 6) & m2) << 4);
    const __m128i sc8 = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, static_cast<int>(sc_hi), static_cast<int>(sc_lo)));
    o->mn16 = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, static_cast<int>(mn_hi), static_cast<int>(mn_lo)));
    // per-32 scales to per-16 lanes: scale j covers 16-lanes 2j and 2j + 1
    scales_from16(_mm256_set_m128i(_mm_unpackhi_epi16(sc8, sc8), _mm_unpacklo_epi16(sc8, sc8)), o);
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    for (int j = 0; j < 4; ++j) {
        __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * j));
        o->q[2 * j] = _mm256_and_si256(v, m4);
        o->q[2 * j + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    }
}

void decode(const BlockQ4K* b, KBlock* o) { q4k_common(b->d, b->dmin, b->scales, b->qs, o); }

void decode(const BlockQ5K* b, KBlock* o) {
    q4k_common(b->d, b->dmin, b->scales, b->qs, o);
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh)), one = _mm256_set1_epi8(1);
    for (int s = 0; s < 8; ++s) {  // bit s of qh[l] is bit 4 of element 32s + l
        __m256i bit = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(s)), one);
        o->q[s] = _mm256_or_si256(o->q[s], _mm256_slli_epi16(bit, 4));
    }
}

__attribute__((always_inline)) inline void decode(const BlockQ6K* b, KBlock* o) {
    o->dw = _cvtsh_ss(b->d);
    o->dm = 0.0f;
    o->sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b->scales)));
    scales_from16(o->sc16, o);
    const __m256i m4 = _mm256_set1_epi8(0x0f), m3 = _mm256_set1_epi8(3);
    for (int h = 0; h < 2; ++h) {  // element 128h + 32s + l, s = 0..3
        const __m256i ql0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->ql + 64 * h));
        const __m256i ql1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->ql + 64 * h + 32));
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh + 32 * h));
        const __m256i lo[4] = {_mm256_and_si256(ql0, m4), _mm256_and_si256(ql1, m4),
                               _mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                               _mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4)};
        for (int s = 0; s < 4; ++s) {
            __m256i hi = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * s)), m3);
            o->q[4 * h + s] = _mm256_or_si256(lo[s], _mm256_slli_epi16(hi, 4));
        }
    }
}

// Sums of 8 int32 vectors in one: lane i = the sum of v[i]'s lanes (exact: integer adds, any order).
inline __m256i sum8(const __m256i* v) {
    const __m256i h0 = _mm256_hadd_epi32(v[0], v[1]), h1 = _mm256_hadd_epi32(v[2], v[3]);
    const __m256i h2 = _mm256_hadd_epi32(v[4], v[5]), h3 = _mm256_hadd_epi32(v[6], v[7]);
    const __m256i g0 = _mm256_hadd_epi32(h0, h1), g1 = _mm256_hadd_epi32(h2, h3);  // rows 0-3, 4-7, per half
    return _mm256_add_epi32(_mm256_permute2x128_si256(g0, g1, 0x21), _mm256_blend_epi32(g0, g1, 0xf0));
}

// Q6_K rows [r0, r1) ((r1 - r0) a multiple of 8) against NR < ROWLANE_Q6K_MIN_RECORDS records: each row is
// decoded and dotted as in reduce_kquant's loop, but a block's integer vector is not reduced on its own:
// the 8 rows' vectors of a record are summed into one (sum8, lane = row) and the float step runs for 8 rows
// at once. The same integers and float steps, so the same bits. A row is read whole (up to
// REDUCE_ROWS8_BLOCKS blocks) before the next; REDUCE_ROWS8_PREFETCH: bytes ahead in the row (a block is 210).
// tuned: docs/perf/2026-12-01-avx2-kernels-zen3.md#reduce-rows8
constexpr int REDUCE_ROWS8_BLOCKS = 40;
constexpr int REDUCE_ROWS8_PREFETCH = 2048;

template <int NR>
void reduce_rows8_q6k(const BlockQ6K* W, int64_t nb, int64_t r0, int64_t r1, const uint8_t* acts, const ActLayout& L,
               float* y, int64_t ldy, int pair) {
    alignas(32) __m256i ibuf[REDUCE_ROWS8_BLOCKS][NR][ROWLANE_ROWS];
    alignas(32) float dwbuf[REDUCE_ROWS8_BLOCKS][ROWLANE_ROWS];
    KBlock dec;
    for (int64_t rg = r0; rg < r1; rg += ROWLANE_ROWS) {
        __m256 acc[NR];
        for (int t = 0; t < NR; ++t) acc[t] = _mm256_setzero_ps();
        for (int64_t b0 = 0; b0 < nb; b0 += REDUCE_ROWS8_BLOCKS) {
            const int nbc = nb - b0 < REDUCE_ROWS8_BLOCKS ? static_cast<int>(nb - b0) : REDUCE_ROWS8_BLOCKS;
            for (int i = 0; i < ROWLANE_ROWS; ++i) {
                const BlockQ6K* row = W + (rg + i) * nb + b0;
                for (int bb = 0; bb < nbc; ++bb) {
                    const char* ahead = reinterpret_cast<const char*>(row + bb) + REDUCE_ROWS8_PREFETCH;
                    for (int off = 0; off < static_cast<int>(sizeof(BlockQ6K)); off += 64) _mm_prefetch(ahead + off, _MM_HINT_T0);
                    decode(row + bb, &dec);
                    dwbuf[bb][i] = dec.dw;
                    for (int t = 0; t < NR; ++t) {
                        const uint8_t* rec = acts + static_cast<int64_t>(t) * L.stride;
                        const int8_t* qx = reinterpret_cast<const int8_t*>(rec) + (b0 + bb) * QK_K;
                        const int16_t* s16 = reinterpret_cast<const int16_t*>(rec + L.sums_off) + (b0 + bb) * 16;
                        __m256i a = _mm256_setzero_si256();
                        for (int k = 0; k < 8; ++k) {
                            const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qx + 32 * k));
                            a = _mm256_add_epi32(a, _mm256_madd_epi16(_mm256_maddubs_epi16(dec.q[k], x), dec.sv[k]));
                        }
                        const __m256i sx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s16));
                        ibuf[bb][t][i] = _mm256_sub_epi32(a, _mm256_slli_epi32(_mm256_madd_epi16(dec.sc16, sx), 5));
                    }
                }
            }
            for (int bb = 0; bb < nbc; ++bb) {
                const __m256 dw = _mm256_load_ps(dwbuf[bb]);
                for (int t = 0; t < NR; ++t) {
                    const float dx = reinterpret_cast<const float*>(acts + static_cast<int64_t>(t) * L.stride + L.d_off)[b0 + bb];
                    acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(dx)), _mm256_cvtepi32_ps(sum8(ibuf[bb][t])), acc[t]);
                }
            }
        }
        for (int t = 0; t < NR; t += pair) {
            const __m256 v = pair == 2 ? _mm256_add_ps(acc[t], acc[t + 1]) : acc[t];
            _mm256_storeu_ps(y + static_cast<int64_t>(t / pair) * ldy + rg, v);
        }
    }
}

// Q6_K rows in groups of 8 of [r0, r1) through reduce_rows8_q6k; returns the first row left.
int64_t reduce_rows8(const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec, float* y,
                     int64_t ldy, int pair) {
    const int64_t nb = K / QK_K, r8 = r0 + (r1 - r0) / ROWLANE_ROWS * ROWLANE_ROWS;
    const ActLayout L = act_layout(GGMLType::Q6_K, K);
    const BlockQ6K* W6 = reinterpret_cast<const BlockQ6K*>(W);
    switch (n_rec) {
        case 1: reduce_rows8_q6k<1>(W6, nb, r0, r8, acts, L, y, ldy, pair); break;
        case 2: reduce_rows8_q6k<2>(W6, nb, r0, r8, acts, L, y, ldy, pair); break;
        case 3: reduce_rows8_q6k<3>(W6, nb, r0, r8, acts, L, y, ldy, pair); break;
        case 4: reduce_rows8_q6k<4>(W6, nb, r0, r8, acts, L, y, ldy, pair); break;
        case 5: reduce_rows8_q6k<5>(W6, nb, r0, r8, acts, L, y, ldy, pair); break;
        case 6: reduce_rows8_q6k<6>(W6, nb, r0, r8, acts, L, y, ldy, pair); break;
        case 7: reduce_rows8_q6k<7>(W6, nb, r0, r8, acts, L, y, ldy, pair); break;
        default: reduce_rows8_q6k<8>(W6, nb, r0, r8, acts, L, y, ldy, pair); break;
    }
    return r8;
}


template <typename Block>
void reduce_kquant(const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec, float* y,
                   int64_t ldy, GGMLType wt, int pair) {
    constexpr bool kQ6 = std::is_same<Block, BlockQ6K>::value;
    const int64_t nb = K / QK_K;
    const ActLayout L = act_layout(wt, K);
    KBlock dec;
    for (int t0 = 0; t0 < n_rec; t0 += R_TILE) {
        const int nt = n_rec - t0 < R_TILE ? n_rec - t0 : R_TILE;
        for (int64_t r = r0; r < r1; ++r) {
            const Block* row = reinterpret_cast<const Block*>(W) + r * nb;
            float acc[R_TILE] = {};
            for (int64_t b = 0; b < nb; ++b) {
                decode(row + b, &dec);
                for (int t = 0; t < nt; ++t) {
                    const uint8_t* rec = acts + static_cast<int64_t>(t0 + t) * L.stride;
                    const int8_t* qx = reinterpret_cast<const int8_t*>(rec) + b * QK_K;
                    const int16_t* s16 = reinterpret_cast<const int16_t*>(rec + L.sums_off) + b * 16;
                    const float dx = reinterpret_cast<const float*>(rec + L.d_off)[b];
                    __m256i a = _mm256_setzero_si256();
                    for (int k = 0; k < 8; ++k) {
                        __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qx + 32 * k));
                        a = _mm256_add_epi32(a, _mm256_madd_epi16(_mm256_maddubs_epi16(dec.q[k], x), dec.sv[k]));
                    }
                    // The offset and min terms in vector form: the same exact integers as the scalar
                    // loops (|s16| <= 16 * 127, so its pair sums fit int16; every int32 step is exact).
                    if constexpr (kQ6) {  // values were stored as q = v + 32: i1 -= 32 sum_k sc_k s16_k
                        const __m256i sx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s16));
                        a = _mm256_sub_epi32(a, _mm256_slli_epi32(_mm256_madd_epi16(dec.sc16, sx), 5));
                        acc[t] = std::fma(dec.dw * dx, static_cast<float>(hsum(a)), acc[t]);
                    } else {
                        const int32_t i1 = hsum(a);
                        const __m128i ps = _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s16)),
                                                          _mm_loadu_si128(reinterpret_cast<const __m128i*>(s16 + 8)));
                        const int32_t i2 = hsum128(_mm_madd_epi16(dec.mn16, ps));
                        acc[t] = std::fma(dec.dw * dx, static_cast<float>(i1), acc[t]);
                        acc[t] = std::fma(-(dec.dm * dx), static_cast<float>(i2), acc[t]);
                    }
                }
            }
            store_out(y, ldy, r, t0, acc, nt, pair);
        }
    }
}

}  // namespace

}  // namespace lg::quant::avx2

namespace lg {

using namespace quant;
using namespace quant::avx2;

bool matmul_simd(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* act_buf,
                 const float* x, int n_rec, float* y, int64_t ldy, int pair) {
    Plan p = plan(wt, K, n_rec);
    if (p.rest == Kernel::none) return false;
    if (const int vi = kernel_variant_index(wt, K, n_rec); vi > 0) {  // the calibrated plan's choice
        Variant v[MAX_KERNEL_VARIANTS];
        if (vi < variants(wt, K, n_rec, v)) p = v[vi].plan;
    }
    if (is_legacy(wt)) {
        r0 = rowlane_legacy(wt, W, K, r0, r1, act_buf, n_rec, y, ldy, pair);
        reduce_legacy(wt, W, K, r0, r1, act_buf, n_rec, y, ldy, pair);  // the rows left over (fewer than 8)
        return true;
    }
    if (p.rows8 == Kernel::reduce_rows8) r0 = reduce_rows8(W, K, r0, r1, act_buf, n_rec, y, ldy, pair);
    else if (p.rows8 != Kernel::none) r0 = rowlane_kquant(p, wt, W, K, r0, r1, act_buf, n_rec, y, ldy, pair);
    if (wt == GGMLType::Q4_K) reduce_kquant<BlockQ4K>(W, K, r0, r1, act_buf, n_rec, y, ldy, wt, pair);
    else if (wt == GGMLType::Q5_K) reduce_kquant<BlockQ5K>(W, K, r0, r1, act_buf, n_rec, y, ldy, wt, pair);
    else reduce_kquant<BlockQ6K>(W, K, r0, r1, act_buf, n_rec, y, ldy, wt, pair);
    return true;
}

int simd_variant_names(GGMLType wt, int64_t K, int n_rec, const char** names) {
    Variant v[MAX_KERNEL_VARIANTS];
    const int n = variants(wt, K, n_rec, v);
    for (int i = 0; i < n; ++i) names[i] = v[i].name;
    return n;
}


#if LG_AVX_VNNI
const char* simd_name() { return "avx2+avxvnni"; }
#else
const char* simd_name() { return "avx2"; }
#endif

bool quantize_blocks_simd(const float* x, int64_t n_blocks, int ablk, int8_t* qs, float* d) {
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
    for (int64_t b = 0; b < n_blocks; ++b) {
        const float* xb = x + b * ablk;
        __m256 m = _mm256_setzero_ps();
        for (int i = 0; i < ablk; i += 8) m = _mm256_max_ps(m, _mm256_and_ps(_mm256_loadu_ps(xb + i), absmask));
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        const float amax = _mm_cvtss_f32(_mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1)));
        const __m256 id = _mm256_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
        for (int i = 0; i < ablk; i += 8) {
            __m256 v = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(xb + i), id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            __m256i q = _mm256_cvtps_epi32(_mm256_min_ps(hi, _mm256_max_ps(lo, v)));
            __m128i q16 = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
            _mm_storel_epi64(reinterpret_cast<__m128i*>(qs + b * ablk + i), _mm_packs_epi16(q16, q16));
        }
        d[b] = amax / 127.0f;
    }
    return true;
}

}  // namespace lg

#endif

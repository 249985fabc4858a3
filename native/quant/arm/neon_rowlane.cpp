// aarch64 NEON row-lane kernel for the K-quants (Q4_K, Q5_K, Q6_K): four weight rows at once, row r of the
// group in int32/float lane r, for a tile of NT records. Each row's blocks are decoded straight into
// registers (the reducing kernel of neon.cpp stores a decoded block and loads it again), its sdot partials
// fold into one vector per (row, record) by pairwise adds, four of those fold into the row lanes, and the
// float steps run on four rows at once. Integer sums are exact, the float steps follow the canonical order
// of blocks.h lane by lane, so results are bit-identical to scalar.cpp. Empty on other targets.
#include "quant/arm/neon.h"

#if LG_SIMD_NEON
#include <type_traits>

namespace lg::quant::LG_NEON_NS {

namespace {

// Q4_K/Q5_K scales of one block in registers: sc for sub-blocks 0-3 and 4-7, mn for 0-7 (the unpacking of
// q4k_unpack_scales in neon.cpp). Reads 16 bytes from s: the block's qh or qs follow its 12 scale bytes.
struct Scales8 {
    int32x4_t lo, hi;
    int16x8_t mn;
};

inline Scales8 q4k_scales(const uint8_t* s) {
    const uint8x16_t v = vld1q_u8(s);
    const uint8x8_t a = vqtbl1_u8(v, vcreate_u8(0x0302010003020100ULL));
    const uint8x8_t b = vqtbl1_u8(v, vcreate_u8(0x0706050407060504ULL));
    const uint8x8_t c = vqtbl1_u8(v, vcreate_u8(0x0B0A09080B0A0908ULL));
    const uint8x8_t first4 = vcreate_u8(0x00000000FFFFFFFFULL), m63 = vdup_n_u8(63), m15 = vdup_n_u8(15);
    const uint8x8_t sc = vbsl_u8(first4, vand_u8(a, m63), vorr_u8(vand_u8(c, m15), vshl_n_u8(vshr_n_u8(a, 6), 4)));
    const uint8x8_t mn = vbsl_u8(first4, vand_u8(b, m63), vorr_u8(vshr_n_u8(c, 4), vshl_n_u8(vshr_n_u8(b, 6), 4)));
    const uint16x8_t sc16 = vmovl_u8(sc);
    return {vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(sc16))), vreinterpretq_s32_u32(vmovl_high_u16(sc16)),
            vreinterpretq_s16_u16(vmovl_u8(mn))};
}

// One Q4_K/Q5_K block of one row against NT records (qx[t]: the records' 256 int8 of this block, xs[t]:
// their sums per 32 values): q1[t] has lane total i1, q2[t] lane total i2 (blocks.h).
template <typename Block, int NT>
inline void row_block_q45(const Block* blk, const int8_t* const* qx, const int16x8_t* xs, int32x4_t* q1,
                          int32x4_t* q2) {
    const Scales8 s = q4k_scales(blk->scales);
    const uint8x16_t m4 = vdupq_n_u8(0x0f), b4 = vdupq_n_u8(0x10);
    uint8x16_t qh[2];
    if constexpr (std::is_same<Block, BlockQ5K>::value) {  // element 32s + l: bit s of qh[l]
        qh[0] = vld1q_u8(blk->qh);
        qh[1] = vld1q_u8(blk->qh + 16);
    }
    int32x4_t pair[NT][4];  // per record, sub-blocks (0,1), (2,3), ...: lanes fold to the two subtotals
    #pragma GCC unroll 16
    for (int j = 0; j < 4; ++j) {  // qs[32j .. 32j+32): low nibbles sub-block 2j, high 2j+1
        int8x16_t w[4];            // sub-block 2j halves 0, 1, then sub-block 2j+1 halves 0, 1
        #pragma GCC unroll 16
        for (int h = 0; h < 2; ++h) {
            const uint8x16_t q = vld1q_u8(blk->qs + 32 * j + 16 * h);
            uint8x16_t lo = vandq_u8(q, m4), hi = vshrq_n_u8(q, 4);
            if constexpr (std::is_same<Block, BlockQ5K>::value) {  // bit s to bit 4: shift by 4 - s, mask
                lo = vorrq_u8(lo, vandq_u8(vshlq_u8(qh[h], vdupq_n_s8(static_cast<int8_t>(4 - 2 * j))), b4));
                hi = vorrq_u8(hi, vandq_u8(vshlq_u8(qh[h], vdupq_n_s8(static_cast<int8_t>(3 - 2 * j))), b4));
            }
            w[h] = vreinterpretq_s8_u8(lo);
            w[2 + h] = vreinterpretq_s8_u8(hi);
        }
        #pragma GCC unroll 16
        for (int t = 0; t < NT; ++t) {
            const int8_t* x = qx[t] + 64 * j;
            const int32x4_t a = dot16(dot16(vdupq_n_s32(0), w[0], vld1q_s8(x)), w[1], vld1q_s8(x + 16));
            const int32x4_t b = dot16(dot16(vdupq_n_s32(0), w[2], vld1q_s8(x + 32)), w[3], vld1q_s8(x + 48));
            pair[t][j] = vpaddq_s32(a, b);
        }
    }
    #pragma GCC unroll 16
    for (int t = 0; t < NT; ++t) {  // lane k of lo: sub-block k, of hi: 4 + k; times its scale
        const int32x4_t lo = vpaddq_s32(pair[t][0], pair[t][1]), hi = vpaddq_s32(pair[t][2], pair[t][3]);
        q1[t] = vmlaq_s32(vmulq_s32(lo, s.lo), hi, s.hi);
        q2[t] = vmlal_high_s16(vmull_s16(vget_low_s16(s.mn), vget_low_s16(xs[t])), s.mn, xs[t]);
    }
}

// One Q6_K block of one row against NT records (xs[t]: their sums per 16 values, sub-blocks 0-7 and 8-15):
// q1[t] has lane total i1. Values decode as q in 0..63; the -32 is applied as -32 * sum_k sc_k * xsum_k.
template <int NT>
inline void row_block_q6(const BlockQ6K* blk, const int8_t* const* qx, const int16x8_t (*xs)[2], int32x4_t* q1) {
    const int8x16_t sc8 = vld1q_s8(blk->scales);
    const int16x8_t sc_lo = vmovl_s8(vget_low_s8(sc8)), sc_hi = vmovl_high_s8(sc8);
    const int32x4_t sc[4] = {vmovl_s16(vget_low_s16(sc_lo)), vmovl_high_s16(sc_lo), vmovl_s16(vget_low_s16(sc_hi)),
                             vmovl_high_s16(sc_hi)};
    const uint8x16_t m4 = vdupq_n_u8(0x0f), m30 = vdupq_n_u8(0x30);
    int32x4_t grp[NT][4];  // lane i of grp[t][g]: sub-block 4g + i (elements 64g + 16i ..)
    #pragma GCC unroll 16
    for (int h = 0; h < 2; ++h) {  // elements 128h + 32s + 16c: sub-block 8h + 2s + c
        const uint8x16_t qh[2] = {vld1q_u8(blk->qh + 32 * h), vld1q_u8(blk->qh + 32 * h + 16)};
        #pragma GCC unroll 16
        for (int s2 = 0; s2 < 2; ++s2) {  // s = s2 (low nibbles) and s2 + 2 (high nibbles) share ql
            int8x16_t w[2][2];              // [s - s2 over 2][c]
            #pragma GCC unroll 16
            for (int c = 0; c < 2; ++c) {
                const uint8x16_t ql = vld1q_u8(blk->ql + 64 * h + 32 * s2 + 16 * c);
                // high bits of s at bits 2s, 2s + 1 of qh: to bits 4, 5
                const uint8x16_t hi_a = vandq_u8(vshlq_u8(qh[c], vdupq_n_s8(static_cast<int8_t>(4 - 2 * s2))), m30);
                const uint8x16_t hi_b = vandq_u8(vshlq_u8(qh[c], vdupq_n_s8(static_cast<int8_t>(-2 * s2))), m30);
                w[0][c] = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(ql, m4), hi_a));
                w[1][c] = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(ql, 4), hi_b));
            }
            #pragma GCC unroll 16
            for (int t = 0; t < NT; ++t) {
                int32x4_t p[2][2];
                #pragma GCC unroll 16
                for (int u = 0; u < 2; ++u)
                    #pragma GCC unroll 16
                    for (int c = 0; c < 2; ++c)
                        p[u][c] = dot16(vdupq_n_s32(0), w[u][c], vld1q_s8(qx[t] + 128 * h + 32 * (s2 + 2 * u) + 16 * c));
                // sub-blocks 8h + 2 s2 + c (group 2h) and 8h + 2 s2 + 4 + c (group 2h + 1)
                const int32x4_t a = vpaddq_s32(p[0][0], p[0][1]), b = vpaddq_s32(p[1][0], p[1][1]);
                if (s2 == 0) {
                    grp[t][2 * h] = a;
                    grp[t][2 * h + 1] = b;
                } else {
                    grp[t][2 * h] = vpaddq_s32(grp[t][2 * h], a);
                    grp[t][2 * h + 1] = vpaddq_s32(grp[t][2 * h + 1], b);
                }
            }
        }
    }
    #pragma GCC unroll 16
    for (int t = 0; t < NT; ++t) {
        int32x4_t acc = vmulq_s32(grp[t][0], sc[0]);
        #pragma GCC unroll 16
        for (int g = 1; g < 4; ++g) acc = vmlaq_s32(acc, grp[t][g], sc[g]);
        int32x4_t bias = vmull_s16(vget_low_s16(sc_lo), vget_low_s16(xs[t][0]));
        bias = vmlal_high_s16(bias, sc_lo, xs[t][0]);
        bias = vmlal_s16(bias, vget_low_s16(sc_hi), vget_low_s16(xs[t][1]));
        bias = vmlal_high_s16(bias, sc_hi, xs[t][1]);
        q1[t] = vsubq_s32(acc, vshlq_n_s32(bias, 5));
    }
}

}  // namespace

// Rows [r, r + 4) against records [t0, t0 + NT): out[t][i] for row r + i. Not inlined: one symbol per tile
// size, whose block loop tools/bench/bench_arm.py finds and models (a call per row group and tile costs nothing).
template <typename Block, int NT>
__attribute__((noinline)) void rowlane_kquant(const uint8_t* W, int64_t K, int64_t r, const uint8_t* acts, int t0,
                                              float (*out)[4]) {
    constexpr bool kQ6 = std::is_same<Block, BlockQ6K>::value;
    constexpr GGMLType kType = kQ6 ? GGMLType::Q6_K : std::is_same<Block, BlockQ5K>::value ? GGMLType::Q5_K : GGMLType::Q4_K;
    const int64_t nb = K / QK_K, stride = nb * static_cast<int64_t>(sizeof(Block));
    const ActLayout L = act_layout(kType, K);
    const Block* rows = reinterpret_cast<const Block*>(W) + r * nb;
    const uint8_t* rec[NT];
    float32x4_t acc[NT];
    #pragma GCC unroll 16
    for (int t = 0; t < NT; ++t) {
        rec[t] = acts + static_cast<int64_t>(t0 + t) * L.stride;
        acc[t] = vdupq_n_f32(0.0f);
    }
    for (int64_t b = 0; b < nb; ++b) {
        const int8_t* qx[NT];
        int16x8_t xs[NT][2];
        #pragma GCC unroll 16
        for (int t = 0; t < NT; ++t) {
            qx[t] = reinterpret_cast<const int8_t*>(rec[t]) + b * QK_K;
            const int16_t* s16 = reinterpret_cast<const int16_t*>(rec[t] + L.sums_off) + b * 16;
            xs[t][0] = vld1q_s16(s16);
            xs[t][1] = vld1q_s16(s16 + 8);
        }
        const Block* blk = rows + b;
        int16x8_t xs32[NT];  // sums per 32 values (Q4_K/Q5_K)
        #pragma GCC unroll 16
        for (int t = 0; t < NT; ++t) xs32[t] = vpaddq_s16(xs[t][0], xs[t][1]);
        int32x4_t h1[2][NT], h2[2][NT];  // rows (0, 1) and (2, 3), folded pairwise as soon as both are done
        #pragma GCC unroll 16
        for (int p = 0; p < 2; ++p) {
            int32x4_t q1[2][NT], q2[2][NT];
            #pragma GCC unroll 16
            for (int i = 0; i < 2; ++i) {
                if constexpr (kQ6) row_block_q6<NT>(blk + (2 * p + i) * nb, qx, xs, q1[i]);
                else row_block_q45<Block, NT>(blk + (2 * p + i) * nb, qx, xs32, q1[i], q2[i]);
            }
            #pragma GCC unroll 16
            for (int t = 0; t < NT; ++t) {
                h1[p][t] = vpaddq_s32(q1[0][t], q1[1][t]);
                if constexpr (!kQ6) h2[p][t] = vpaddq_s32(q2[0][t], q2[1][t]);
            }
        }
        const float32x4_t dw = h2f_rows(reinterpret_cast<const uint8_t*>(&blk->d), stride);
        #pragma GCC unroll 16
        for (int t = 0; t < NT; ++t) {
            const float dx = reinterpret_cast<const float*>(rec[t] + L.d_off)[b];
            const int32x4_t i1 = vpaddq_s32(h1[0][t], h1[1][t]);  // lane i: row i's total
            acc[t] = vfmaq_f32(acc[t], vmulq_n_f32(dw, dx), vcvtq_f32_s32(i1));
            if constexpr (!kQ6) {
                const float32x4_t dm = h2f_rows(reinterpret_cast<const uint8_t*>(&blk->dmin), stride);
                const int32x4_t i2 = vpaddq_s32(h2[0][t], h2[1][t]);
                acc[t] = vfmaq_f32(acc[t], vnegq_f32(vmulq_n_f32(dm, dx)), vcvtq_f32_s32(i2));
            }
        }
    }
    #pragma GCC unroll 16
    for (int t = 0; t < NT; ++t) vst1q_f32(out[t], acc[t]);
}

// Rows [r0, r1) in groups of neon::ROWLANE_ROWS (r1 - r0 a multiple of it), one record at a time: the plan
// sends only one-record calls here (tiles of 2 and 4 records spill registers and lose to the reducing
// kernel in the Cortex-A76 model: docs/perf/2026-12-02-arm-kernels.md).
template <typename Block>
void rowlane_kquant_rows(const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec,
                         float* y, int64_t ldy, GGMLType wt, int pair) {
    for (int64_t r = r0; r < r1; r += neon::ROWLANE_ROWS) {
        for (int t = 0; t < n_rec; t += pair) {
            float out[2][4];
            rowlane_kquant<Block, 1>(W, K, r, acts, t, out);
            if (pair == 2) rowlane_kquant<Block, 1>(W, K, r, acts, t + 1, out + 1);
            for (int i = 0; i < neon::ROWLANE_ROWS; ++i) {
                const float col[2] = {out[0][i], out[1][i]};
                store_out(y, ldy, r + i, t, col, pair, pair);
            }
        }
    }
}

template void rowlane_kquant_rows<BlockQ4K>(const uint8_t*, int64_t, int64_t, int64_t, const uint8_t*, int, float*,
                                            int64_t, GGMLType, int);
template void rowlane_kquant_rows<BlockQ5K>(const uint8_t*, int64_t, int64_t, int64_t, const uint8_t*, int, float*,
                                            int64_t, GGMLType, int);
template void rowlane_kquant_rows<BlockQ6K>(const uint8_t*, int64_t, int64_t, int64_t, const uint8_t*, int, float*,
                                            int64_t, GGMLType, int);

}  // namespace lg::quant::LG_NEON_NS

#endif

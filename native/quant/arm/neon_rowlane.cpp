// aarch64 NEON row-lane kernel for Q4_K and Q5_K: four weight rows at once, row r of the
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

}  // namespace

// Rows [r, r + 4) against records [t0, t0 + NT): out[t][i] for row r + i. Not inlined: one symbol per tile
// size, whose block loop tools/bench/bench_arm.py finds and models (a call per row group and tile costs nothing).
template <typename Block, int NT>
__attribute__((noinline)) void rowlane_kquant(const uint8_t* W, int64_t K, int64_t r, const uint8_t* acts, int t0,
                                              float (*out)[4]) {
    const int64_t nb = K / QK_K, stride = nb * static_cast<int64_t>(sizeof(Block));
    const ActLayout L = act_layout(kquant_type<Block>(), K);
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
        int16x8_t xs32[NT];  // sums per 32 values
        #pragma GCC unroll 16
        for (int t = 0; t < NT; ++t) xs32[t] = vpaddq_s16(xs[t][0], xs[t][1]);
        int32x4_t h1[2][NT], h2[2][NT];  // rows (0, 1) and (2, 3), folded pairwise as soon as both are done
        #pragma GCC unroll 16
        for (int p = 0; p < 2; ++p) {
            int32x4_t q1[2][NT], q2[2][NT];
            #pragma GCC unroll 16
            for (int i = 0; i < 2; ++i) row_block_q45<Block, NT>(blk + (2 * p + i) * nb, qx, xs32, q1[i], q2[i]);
            #pragma GCC unroll 16
            for (int t = 0; t < NT; ++t) {
                h1[p][t] = vpaddq_s32(q1[0][t], q1[1][t]);
                h2[p][t] = vpaddq_s32(q2[0][t], q2[1][t]);
            }
        }
        const float32x4_t dw = h2f_rows(reinterpret_cast<const uint8_t*>(&blk->d), stride);
        #pragma GCC unroll 16
        for (int t = 0; t < NT; ++t) {
            const float dx = reinterpret_cast<const float*>(rec[t] + L.d_off)[b];
            const int32x4_t i1 = vpaddq_s32(h1[0][t], h1[1][t]);  // lane i: row i's total
            const float32x4_t dm = h2f_rows(reinterpret_cast<const uint8_t*>(&blk->dmin), stride);
            const int32x4_t i2 = vpaddq_s32(h2[0][t], h2[1][t]);
            acc[t] = vfmaq_f32(acc[t], vmulq_n_f32(dw, dx), vcvtq_f32_s32(i1));
            acc[t] = vfmaq_f32(acc[t], vnegq_f32(vmulq_n_f32(dm, dx)), vcvtq_f32_s32(i2));
        }
    }
    #pragma GCC unroll 16
    for (int t = 0; t < NT; ++t) vst1q_f32(out[t], acc[t]);
}

// Rows [r0, r1) in groups of neon::ROWLANE_ROWS (r1 - r0 a multiple of it), one record at a time: the plan
// sends only one-record calls here (tiles of 2 and 4 records spilled registers and lost to the reducing
// kernel in the Cortex-A76 model: docs/perf/2026-12-02-arm-kernels.md#the-plan-planh-from-the-same-model).
// A Q6_K row-lane kernel lost even at one record (78 against 77 cycles per block and row) and is not kept.
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

}  // namespace lg::quant::LG_NEON_NS

#endif

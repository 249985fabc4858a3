// aarch64 NEON kernels over packed weights (Q4_0, Q5_0, Q8_0, Q4_K, Q6_K; layouts in quant/repack.cpp): four rows of a
// group in the four int32/float lanes of one vector. Each 16-byte weight load holds four bytes of each row,
// so one by-element sdot (vdotq_laneq_s32) against four activation bytes adds the four rows' partial dots
// lane by lane: no per-row folds, and the rows' scales come as one vector. A decoded block serves a tile of
// up to four records. Integer sums are exact and the float steps follow blocks.h lane by lane, so results
// are bit-identical to scalar.cpp. The plain Armv8-A variant forms the same lane sums with widening
// multiplies. Empty on other targets.
#include "quant/arm/neon.h"

#if LG_SIMD_NEON

namespace lg::quant::LG_NEON_NS {

namespace {

constexpr int PK_TILE = 4;  // records a decoded block serves (more spills registers)

// acc lane r += dot(bytes 4r..4r+3 of w, bytes 4C..4C+3 of x): row r of a packed chunk against four values.
template <int C>
inline int32x4_t dot_lane(int32x4_t acc, int8x16_t w, int8x16_t x) {
#if LG_NEON_DOTPROD
    return vdotq_laneq_s32(acc, w, x, C);
#else
    const int8x16_t xb = vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(x), C));
    const int32x4_t lo = vpaddlq_s16(vmull_s8(vget_low_s8(w), vget_low_s8(xb)));  // |w x| <= 128 * 127
    const int32x4_t hi = vpaddlq_s16(vmull_high_s8(w, xb));
    return vaddq_s32(acc, vpaddq_s32(lo, hi));
#endif
}

// The four rows' dots with 32 values x0 (16), x1 (16): chunks w[0..3] against x0, w[4..7] against x1. One
// chain: in the Cortex-A76 model two chains and an add cost more than the chain's latency, which the next
// block's independent chain hides.
inline int32x4_t dot32(int32x4_t a, const int8x16_t* w, int8x16_t x0, int8x16_t x1) {
    a = dot_lane<0>(a, w[0], x0);
    a = dot_lane<1>(a, w[1], x0);
    a = dot_lane<2>(a, w[2], x0);
    a = dot_lane<3>(a, w[3], x0);
    a = dot_lane<0>(a, w[4], x1);
    a = dot_lane<1>(a, w[5], x1);
    a = dot_lane<2>(a, w[6], x1);
    return dot_lane<3>(a, w[7], x1);
}

// Telescoped scales. With C_m the running dot sum after the m-th sub-block of a block (never reset inside
// the block), sum_m sc_m (C_m - C_m-1) = sum_m (sc_m - sc_m+1) C_m (sc past the last = 0): one multiply-add per
// sub-block and no zeroed accumulator (used from 2 records on: for one record the unbroken chain of sdots is
// slower than zeroing). The terms may wrap int32; the total is the exact i1, which fits.
// v[k]: the scales of sub-blocks 2k, 2k + 1 (lanes: 4 rows each); returns their differences, same shape.
template <int N>
inline void scale_steps(int16x8_t* v) {
    #pragma GCC unroll 8
    for (int k = 0; k < N; ++k) v[k] = vsubq_s16(v[k], vextq_s16(v[k], k + 1 < N ? v[k + 1] : vdupq_n_s16(0), 4));
}

inline float32x4_t h2f4(const uint8_t* p) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p))));
}

// Q4_0 / Q5_0 / Q8_0, one group against records [t0, t0 + NT): out[t][r] for row r. The group's blocks come lane-major,
// so canonical lane l is one pass over contiguous blocks with one accumulator per record.
// Not inlined: one symbol per type and tile, whose block loop tools/bench/bench_arm.py models.
template <GGMLType WT, int NT>
__attribute__((noinline)) void packed_legacy(const uint8_t* G, int64_t nb, const uint8_t* acts, int t0, float (*out)[4]) {
    constexpr bool q4 = WT == GGMLType::Q4_0, q5 = WT == GGMLType::Q5_0;
    constexpr int64_t PB = q4 ? 72 : q5 ? 88 : 136;
    const ActLayout L = act_layout(WT, nb * QK32);
    const int8_t* qx[NT];
    const float* dx[NT];
    for (int t = 0; t < NT; ++t) {
        const uint8_t* rec = acts + static_cast<int64_t>(t0 + t) * L.stride;
        qx[t] = reinterpret_cast<const int8_t*>(rec);
        dx[t] = reinterpret_cast<const float*>(rec + L.d_off);
    }
    float32x4_t lanes[NT][L_LANES];
    const uint8_t* blk = G;
    for (int l = 0; l < L_LANES; ++l) {
        float32x4_t acc[NT];
        for (int t = 0; t < NT; ++t) acc[t] = vdupq_n_f32(0.0f);
        for (int64_t b = l; b < nb; b += L_LANES, blk += PB) {
            const float32x4_t dw = h2f4(blk);
            int8x16_t w[8];
            if constexpr (q4) {  // stored n ^ 8 per nibble: shifted or masked to the high nibble, (n - 8) * 16
                #pragma GCC unroll 4
                for (int c = 0; c < 4; ++c) {
                    const int8x16_t q = vld1q_s8(reinterpret_cast<const int8_t*>(blk + 8 + 16 * c));
                    w[c] = vshlq_n_s8(q, 4);
                    w[4 + c] = vreinterpretq_s8_u8(vandq_u8(vreinterpretq_u8_s8(q), vdupq_n_u8(0xf0)));
                }
            } else if constexpr (q5) {  // n | fifth bit << 4, minus 16: n, with 0xf0 where the (inverted) bit is set
                const uint8x16_t hb = vld1q_u8(blk + 8);
                #pragma GCC unroll 4
                for (int c = 0; c < 4; ++c) {
                    const uint8x16_t q = vld1q_u8(blk + 24 + 16 * c);
                    const uint8x16_t lo = vtstq_u8(hb, vdupq_n_u8(static_cast<uint8_t>(1 << c)));
                    const uint8x16_t hi = vtstq_u8(hb, vdupq_n_u8(static_cast<uint8_t>(16 << c)));
                    w[c] = vreinterpretq_s8_u8(vsliq_n_u8(q, lo, 4));
                    w[4 + c] = vreinterpretq_s8_u8(vsliq_n_u8(vshrq_n_u8(q, 4), hi, 4));
                }
            } else {
                #pragma GCC unroll 8
                for (int c = 0; c < 8; ++c) w[c] = vld1q_s8(reinterpret_cast<const int8_t*>(blk + 8 + 16 * c));
            }
            #pragma GCC unroll 4
            for (int t = 0; t < NT; ++t) {
                const int8_t* x = qx[t] + b * QK32;
                const int32x4_t s = dot32(vdupq_n_s32(0), w, vld1q_s8(x), vld1q_s8(x + 16));
                // Q4_0: s = 16 i1 exactly; the fixed-point convert divides by 16 exactly (|i1| < 2^24)
                const float32x4_t f = q4 ? vcvtq_n_f32_s32(s, 4) : vcvtq_f32_s32(s);
                acc[t] = vfmaq_f32(acc[t], vmulq_n_f32(dw, dx[t][b]), f);
            }
        }
        for (int t = 0; t < NT; ++t) lanes[t][l] = acc[t];
    }
    for (int t = 0; t < NT; ++t) {  // reduce_lanes, four rows at once: (l, l+4), then (l, l+2), then (l, l+1)
        for (int w = L_LANES / 2; w >= 1; w /= 2)
            for (int l = 0; l < w; ++l) lanes[t][l] = vaddq_f32(lanes[t][l], lanes[t][l + w]);
        vst1q_f32(out[t], lanes[t][0]);
    }
}

// Q4_K, one group against records [t0, t0 + NT). Per block: the 32 (sub-block, row) scales and mins unpacked
// at once, then per 64 values (sub-blocks 2p, 2p+1) 8 chunk loads give 16 decoded vectors that every record
// of the tile uses: i1 = sum over sub-blocks of sc x (lane dot), i2 = sum of mn x (the record's sums per 32).
template <int NT>
__attribute__((noinline)) void packed_q4k(const uint8_t* G, int64_t nb, const uint8_t* acts, int t0, float (*out)[4]) {
    const ActLayout L = act_layout(GGMLType::Q4_K, nb * QK_K);
    const int8_t* qx[NT];
    const int16_t* xs[NT];
    const float* dx[NT];
    float32x4_t acc[NT];
    for (int t = 0; t < NT; ++t) {
        const uint8_t* rec = acts + static_cast<int64_t>(t0 + t) * L.stride;
        qx[t] = reinterpret_cast<const int8_t*>(rec);
        xs[t] = reinterpret_cast<const int16_t*>(rec + L.sums_off);
        dx[t] = reinterpret_cast<const float*>(rec + L.d_off);
        acc[t] = vdupq_n_f32(0.0f);
    }
    const uint8x16_t m4 = vdupq_n_u8(0x0f), m3 = vdupq_n_u8(3);
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = G + b * 576;
        const float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(reinterpret_cast<const uint16_t*>(blk)));
        const float32x4_t dw = vcvt_f32_f16(vget_low_f16(h)), dm = vcvt_high_f32_f16(h);
        const uint8x16_t ls = vld1q_u8(blk + 16), ms = vld1q_u8(blk + 32), hs = vld1q_u8(blk + 48);
        const uint8x16_t sc0 = vsliq_n_u8(ls, vandq_u8(hs, m3), 4);  // entries 4j + r, j < 4
        const uint8x16_t sc1 = vsliq_n_u8(vshrq_n_u8(ls, 4), vandq_u8(vshrq_n_u8(hs, 2), m3), 4);
        const uint8x16_t mn0 = vsliq_n_u8(ms, vandq_u8(vshrq_n_u8(hs, 4), m3), 4);
        const uint8x16_t mn1 = vsliq_n_u8(vshrq_n_u8(ms, 4), vshrq_n_u8(hs, 6), 4);
        const int16x8_t mn[4] = {vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(mn0))), vreinterpretq_s16_u16(vmovl_high_u8(mn0)),
                                 vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(mn1))), vreinterpretq_s16_u16(vmovl_high_u8(mn1))};
        int16x8_t sw[4] = {vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(sc0))), vreinterpretq_s16_u16(vmovl_high_u8(sc0)),
                           vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(sc1))), vreinterpretq_s16_u16(vmovl_high_u8(sc1))};
        if constexpr (NT > 1) scale_steps<4>(sw);  // one record: zeroed sums (the running one is a long chain)
        int32x4_t i1[NT], i2[NT], run[NT];
        #pragma GCC unroll 4
        for (int t = 0; t < NT; ++t) {  // lane j of s: the record's sum over sub-block j
            const int16x8_t s = vpaddq_s16(vld1q_s16(xs[t] + 16 * b), vld1q_s16(xs[t] + 16 * b + 8));
            int32x4_t v = vmull_laneq_s16(vget_low_s16(mn[0]), s, 0);
            v = vmlal_high_laneq_s16(v, mn[0], s, 1);
            v = vmlal_laneq_s16(v, vget_low_s16(mn[1]), s, 2);
            v = vmlal_high_laneq_s16(v, mn[1], s, 3);
            v = vmlal_laneq_s16(v, vget_low_s16(mn[2]), s, 4);
            v = vmlal_high_laneq_s16(v, mn[2], s, 5);
            v = vmlal_laneq_s16(v, vget_low_s16(mn[3]), s, 6);
            i2[t] = vmlal_high_laneq_s16(v, mn[3], s, 7);
            i1[t] = vdupq_n_s32(0);
            run[t] = vdupq_n_s32(0);
        }
        #pragma GCC unroll 4
        for (int p = 0; p < 4; ++p) {
            int8x16_t lo[8], hi[8];
            #pragma GCC unroll 8
            for (int c = 0; c < 8; ++c) {
                const uint8x16_t q = vld1q_u8(blk + 64 + 128 * p + 16 * c);
                lo[c] = vreinterpretq_s8_u8(vandq_u8(q, m4));
                hi[c] = vreinterpretq_s8_u8(vshrq_n_u8(q, 4));
            }
            // sw[p]: the steps of sub-block 2p in its low half (lanes = rows), of 2p + 1 in its high half
            const int32x4_t sj0 = vmovl_s16(vget_low_s16(sw[p])), sj1 = vmovl_high_s16(sw[p]);
            #pragma GCC unroll 4
            for (int t = 0; t < NT; ++t) {
                const int8_t* x = qx[t] + b * QK_K + 64 * p;
                // scale_steps: i1 = sum of (sc_j - sc_j+1) x the running sum; |i1| <= 8 * 63 * 32 * 15 * 127 < 2^31
                if constexpr (NT == 1) run[t] = vdupq_n_s32(0);
                run[t] = dot32(run[t], lo, vld1q_s8(x), vld1q_s8(x + 16));
                i1[t] = vmlaq_s32(i1[t], run[t], sj0);
                if constexpr (NT == 1) run[t] = vdupq_n_s32(0);
                run[t] = dot32(run[t], hi, vld1q_s8(x + 32), vld1q_s8(x + 48));
                i1[t] = vmlaq_s32(i1[t], run[t], sj1);
            }
        }
        #pragma GCC unroll 4
        for (int t = 0; t < NT; ++t) {
            acc[t] = vfmaq_f32(acc[t], vmulq_n_f32(dw, dx[t][b]), vcvtq_f32_s32(i1[t]));
            acc[t] = vfmsq_f32(acc[t], vmulq_n_f32(dm, dx[t][b]), vcvtq_f32_s32(i2[t]));  // fmaf(-(dm dx), i2, acc)
        }
    }
    for (int t = 0; t < NT; ++t) vst1q_f32(out[t], acc[t]);
}

// Q6_K, one group against records [t0, t0 + NT). Per block and sub-block 8h + 2s + u: 4 chunk vectors decoded
// (from 4 chunks of qh and 4 of ql), then per record 4 lane dots into the sub-block's sum and i1 += sc x sum. q - 32 is built as a 6-bit two's complement value: the low
// nibble of ql with the sign-extended 2-bit field of qh (its top bit flipped at packing) inserted above it.
template <int NT>
__attribute__((noinline)) void packed_q6k(const uint8_t* G, int64_t nb, const uint8_t* acts, int t0, float (*out)[4]) {
    const ActLayout L = act_layout(GGMLType::Q6_K, nb * QK_K);
    const int8_t* qx[NT];
    const float* dx[NT];
    float32x4_t acc[NT];
    for (int t = 0; t < NT; ++t) {
        const uint8_t* rec = acts + static_cast<int64_t>(t0 + t) * L.stride;
        qx[t] = reinterpret_cast<const int8_t*>(rec);
        dx[t] = reinterpret_cast<const float*>(rec + L.d_off);
        acc[t] = vdupq_n_f32(0.0f);
    }
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = G + b * 840;
        const float32x4_t dw = h2f4(blk);
        int32x4_t i1[NT], run[NT];
        for (int t = 0; t < NT; ++t) i1[t] = run[t] = vdupq_n_s32(0);
        int16x8_t steps[8];  // scale_steps over the sub-blocks in the order they run: (hu, s) = 4 hu + s
        #pragma GCC unroll 4
        for (int hu = 0; hu < 4; ++hu) {
            const int8x16_t sc8 = vld1q_s8(reinterpret_cast<const int8_t*>(blk + 8 + 16 * hu));  // [s][r]
            steps[2 * hu] = vmovl_s8(vget_low_s8(sc8));
            steps[2 * hu + 1] = vmovl_high_s8(sc8);
        }
        if constexpr (NT > 1) scale_steps<8>(steps);  // one record: zeroed sums, as packed_q4k
        #pragma GCC unroll 4
        for (int hu = 0; hu < 4; ++hu) {  // h = hu / 2, u = hu % 2
            const int h = hu / 2, u = hu % 2;
            #pragma GCC unroll 4
            for (int s = 0; s < 4; ++s) {  // sub-block 8h + 2s + u: 4 decoded vectors live at a time
                int8x16_t w[4];  // [j]: elements 128h + 32s + 16u + 4j + (0..3) of the four rows
                #pragma GCC unroll 4
                for (int j = 0; j < 4; ++j) {
                    const int8x16_t qh = vld1q_s8(reinterpret_cast<const int8_t*>(blk + 584 + 16 * (8 * h + 4 * u + j)));
                    // ql bytes 64h + 16u + 4j (s = 0, 2: low, high nibble) or 32 further (s = 1, 3)
                    const uint8x16_t ql = vld1q_u8(blk + 72 + 16 * (16 * h + 4 * u + j + 8 * (s % 2)));
                    // field s of qh, sign-extended over the byte (its top bit was flipped at packing)
                    const int8x16_t f = s == 3 ? vshrq_n_s8(qh, 6) : vshrq_n_s8(vshlq_n_s8(qh, 6 - 2 * s), 6);
                    w[j] = vreinterpretq_s8_u8(vsliq_n_u8(s < 2 ? ql : vshrq_n_u8(ql, 4), vreinterpretq_u8_s8(f), 4));
                }
                const int16x8_t st = steps[2 * hu + s / 2];
                const int32x4_t sc = s % 2 ? vmovl_high_s16(st) : vmovl_s16(vget_low_s16(st));
                #pragma GCC unroll 4
                for (int t = 0; t < NT; ++t) {
                    const int8x16_t x = vld1q_s8(qx[t] + b * QK_K + 16 * (8 * h + 2 * s + u));
                    int32x4_t d = dot_lane<0>(NT == 1 ? vdupq_n_s32(0) : run[t], w[0], x);
                    d = dot_lane<1>(d, w[1], x);
                    d = dot_lane<2>(d, w[2], x);
                    run[t] = dot_lane<3>(d, w[3], x);
                    i1[t] = vmlaq_s32(i1[t], run[t], sc);  // scale_steps; |i1| <= 16 * 128 * 16 * 32 * 127 < 2^31
                }
            }
        }
        #pragma GCC unroll 4
        for (int t = 0; t < NT; ++t) acc[t] = vfmaq_f32(acc[t], vmulq_n_f32(dw, dx[t][b]), vcvtq_f32_s32(i1[t]));
    }
    for (int t = 0; t < NT; ++t) vst1q_f32(out[t], acc[t]);
}

template <int NT>
void packed_group(GGMLType wt, const uint8_t* G, int64_t nb, const uint8_t* acts, int t0, float (*out)[4]) {
    if (wt == GGMLType::Q4_0) packed_legacy<GGMLType::Q4_0, NT>(G, nb, acts, t0, out);
    else if (wt == GGMLType::Q5_0) packed_legacy<GGMLType::Q5_0, NT>(G, nb, acts, t0, out);
    else if (wt == GGMLType::Q8_0) packed_legacy<GGMLType::Q8_0, NT>(G, nb, acts, t0, out);
    else if (wt == GGMLType::Q4_K) packed_q4k<NT>(G, nb, acts, t0, out);
    else packed_q6k<NT>(G, nb, acts, t0, out);
}

}  // namespace

bool matmul_packed(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec,
                   float* y, int64_t ldy, int pair) {
    if (!pack_type(wt)) return false;
    const int64_t gb = PACK_ROWS * quant_row_bytes(wt, K), nb = K / quant_block_elems(wt);
    for (int64_t r = r0; r < r1; r += PACK_ROWS) {
        const uint8_t* G = W + r / PACK_ROWS * gb;
        for (int t0 = 0; t0 < n_rec;) {  // tiles of 4, 2, 1 records: a pair (pair = 2) stays in one tile
            const int nt = n_rec - t0 >= PK_TILE ? PK_TILE : n_rec - t0 >= 2 ? 2 : 1;
            float out[PK_TILE][4] = {};
            if (nt == 4) packed_group<4>(wt, G, nb, acts, t0, out);
            else if (nt == 2) packed_group<2>(wt, G, nb, acts, t0, out);
            else packed_group<1>(wt, G, nb, acts, t0, out);
            for (int i = 0; i < PACK_ROWS; ++i) {
                const float col[PK_TILE] = {out[0][i], out[1][i], out[2][i], out[3][i]};
                store_out(y, ldy, r + i, t0, col, nt, pair);
            }
            t0 += nt;
        }
    }
    return true;
}

}  // namespace lg::quant::LG_NEON_NS

#endif

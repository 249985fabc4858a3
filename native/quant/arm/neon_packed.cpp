// aarch64 NEON kernels over packed weights (every quantized type; layouts in quant/repack.cpp): four rows of a
// group in the four int32/float lanes of one vector. Each 16-byte weight load holds four bytes of each row,
// so one by-element sdot (vdotq_laneq_s32) against four activation bytes adds the four rows' partial dots
// lane by lane: no per-row folds, and the rows' scales come as one vector. A decoded block serves a tile of
// up to 8 records. Integer sums are exact and the float steps follow blocks.h lane by lane, so results
// are bit-identical to scalar.cpp. The plain Armv8-A variant forms the same lane sums with widening
// multiplies. The i8mm variant (neon_i8mm.cpp) runs its own smmla kernels (below, LG_NEON_I8MM) over the
// row-pair layout instead, for every packed type. Empty on other targets.
#include <cstring>
#include <utility>
#include <vector>

#include "quant/arm/neon.h"

#if LG_SIMD_NEON

namespace lg::quant::LG_NEON_NS {

namespace {

constexpr int PK_TILE = 8;    // the most records a decoded block serves
constexpr int PK_TILE_K = 8;  // K-quants: 8 as well (the rolled sub-block loops keep 8 records' sums in registers)

// f(std::integral_constant<int, i>) for i = 0..N-1: lane indices stay compile-time constants.
template <typename F, int... I>
inline void static_for_impl(F&& f, std::integer_sequence<int, I...>) {
    (f(std::integral_constant<int, I>{}), ...);
}
template <int N, typename F>
inline void static_for(F&& f) {
    static_for_impl(f, std::make_integer_sequence<int, N>{});
}

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

// dot32 for the K-quant sub-block loops: there, written as intrinsics, GCC moves the partial sum between
// registers halfway through the chain (a vector-pipe MOV per chain, record and sub-block); one asm statement
// keeps the chain in one register. (The legacy loops schedule better with the intrinsics.)
inline int32x4_t dot32_chain(int32x4_t a, const int8x16_t* w, int8x16_t x0, int8x16_t x1) {
#if LG_NEON_DOTPROD
    asm("sdot %0.4s, %1.16b, %9.4b[0]\n\tsdot %0.4s, %2.16b, %9.4b[1]\n\t"
        "sdot %0.4s, %3.16b, %9.4b[2]\n\tsdot %0.4s, %4.16b, %9.4b[3]\n\t"
        "sdot %0.4s, %5.16b, %10.4b[0]\n\tsdot %0.4s, %6.16b, %10.4b[1]\n\t"
        "sdot %0.4s, %7.16b, %10.4b[2]\n\tsdot %0.4s, %8.16b, %10.4b[3]"
        : "+w"(a)
        : "w"(w[0]), "w"(w[1]), "w"(w[2]), "w"(w[3]), "w"(w[4]), "w"(w[5]), "w"(w[6]), "w"(w[7]), "w"(x0), "w"(x1));
    return a;
#else
    return dot32(a, w, x0, x1);
#endif
}

// Telescoped scales. With C_m the running dot sum after the m-th sub-block of a block (never reset inside
// the block), sum_m sc_m (C_m - C_m-1) = sum_m (sc_m - sc_m+1) C_m (sc past the last = 0): one multiply-add per
// sub-block and no zeroed accumulator (used from 2 records on: for one record the unbroken chain of sdots is
// slower than zeroing). The terms may wrap int32; the total is the exact i1, which fits.

// v in every lane, moved from a general register: DUP (general) runs on the M pipe of the A76 / Neoverse N1
// pipeline, not on the two vector pipes the sdot chains fill. (Without the barrier GCC keeps a constant in a
// vector register and copies it with a vector-pipe MOV for every chain.)
inline int32x4_t dup_gpr(int32_t v) {
    asm volatile("" : "+r"(v));
    return vdupq_n_s32(v);
}

// p, opaque to the compiler: loads through it are not merged with earlier loads of the same bytes (which would
// keep those vectors live, and spill, instead of reloading them on the load pipes).
template <typename T>
inline const T* fresh(const T* p) {
    asm volatile("" : "+r"(p));
    return p;
}

inline float32x4_t h2f4(const uint8_t* p) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p))));
}

// Per-call side table of a tile of NT records (built once per call by matmul_packed, read by every group):
// per weight block b, side_rows(WT) rows of NT values: the records' dx, then (Q4_1, Q5_1) the block sums as
// floats, then (Q4_1, Q5_1) the int32 start of the sdot sum (below); (Q4_K, Q5_K) dx, then per record 16 bytes:
// the 8 sub-block sums S_j (of 32) split as S_j = 32 a_j + b_j, a_j = S_j >> 5 in [-127, 127], b_j in [0, 31],
// as a_0..a_7, b_0..b_7 (int8). One pointer and vector loads replace NT record pointers.
constexpr int side_rows(GGMLType wt) {
    return wt == GGMLType::Q4_1 || wt == GGMLType::Q5_1 ? 3 : wt == GGMLType::Q4_K || wt == GGMLType::Q5_K ? 5 : 1;
}

// Legacy sums converted without scvtf: the sdot chain starts at the bit pattern of MAGIC = 1.5 * 2^(23 - FB),
// so it ends at the pattern of MAGIC + i1 (an integer s added to the mantissa of a float in [2^(23 - FB),
// 2^(24 - FB)) adds s * 2^-FB: FB = 4 for Q4_0/Q4_1, whose lane sums are 16 i1); one fsub then gives (float)i1
// exactly, as |i1| < 2^(22 - FB) keeps the sum inside that binade (|i1| <= 32 * 128 * 127 < 2^19; Q4: < 2^16).
// Q4_1/Q5_1 store their values as Q4_0/Q5_0 do (offset by 8 or 16), so their chains start at MAGIC + 128 sum
// (Q4_1: 16 x 8 per value) or MAGIC + 16 sum (Q5_1), sum = the record's block sum.
template <GGMLType WT>
struct LegacyPk {
    static constexpr bool q4 = WT == GGMLType::Q4_0 || WT == GGMLType::Q4_1;
    static constexpr bool q5 = WT == GGMLType::Q5_0 || WT == GGMLType::Q5_1;
    static constexpr bool min = WT == GGMLType::Q4_1 || WT == GGMLType::Q5_1;
    static constexpr int64_t PB = 4 * (q4 ? 18 : q5 ? 22 : 34) + (min ? 8 : 0);  // packed block bytes
    static constexpr int QOFF = min ? 16 : 8;                                     // after d (and m) x 4
    static constexpr int32_t MAGIC = q4 ? 0x49400000 : 0x4B400000;               // 1.5 * 2^19, 1.5 * 2^23
    static constexpr uint32_t MAGIC_U = static_cast<uint32_t>(MAGIC);
    static constexpr float MAGIC_F = q4 ? 786432.0f : 12582912.0f;
    static constexpr int BIAS = WT == GGMLType::Q4_1 ? 128 : WT == GGMLType::Q5_1 ? 16 : 0;
};

// Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q8_0, one group against records [t0, t0 + NT): out[t][r] for row r. The group's
// blocks come lane-major, so canonical lane l is one pass over contiguous blocks with one accumulator per record.
// Not inlined: one symbol per type and tile, whose block loop tools/bench/bench_arm.py models.
template <GGMLType WT, int NT>
__attribute__((noinline)) void packed_legacy(const uint8_t* G, int64_t nb, const uint8_t* acts, int t0, const float* side,
                                             float (*out)[4]) {
    using P = LegacyPk<WT>;
    constexpr int NV = (NT + 3) / 4, SR = side_rows(WT);
    const ActLayout L = act_layout(WT, nb * QK32);
    const int8_t* qx = reinterpret_cast<const int8_t*>(acts + static_cast<int64_t>(t0) * L.stride);
    const int64_t xs = L.stride;
    float32x4_t lanes[NT][L_LANES];
    const uint8_t* blk = G;
    const float32x4_t magic_f = vdupq_n_f32(P::MAGIC_F);
    for (int l = 0; l < L_LANES; ++l) {
        float32x4_t acc[NT];
        for (int t = 0; t < NT; ++t) acc[t] = vdupq_n_f32(0.0f);
        for (int64_t b = l; b < nb; b += L_LANES, blk += P::PB) {
            const float32x4_t dw = h2f4(blk);
            int8x16_t w[8];
            if constexpr (P::q4) {  // stored n ^ 8 per nibble: shifted or masked to the high nibble, (n - 8) * 16
                #pragma GCC unroll 4
                for (int c = 0; c < 4; ++c) {
                    const int8x16_t q = vld1q_s8(reinterpret_cast<const int8_t*>(blk + P::QOFF + 16 * c));
                    w[c] = vshlq_n_s8(q, 4);
                    w[4 + c] = vreinterpretq_s8_u8(vandq_u8(vreinterpretq_u8_s8(q), vdupq_n_u8(0xf0)));
                }
            } else if constexpr (P::q5) {  // n | fifth bit << 4, minus 16: n, with 0xf0 where the (inverted) bit is set
                const uint8x16_t hb = vld1q_u8(blk + P::QOFF);
                #pragma GCC unroll 4
                for (int c = 0; c < 4; ++c) {
                    const uint8x16_t q = vld1q_u8(blk + P::QOFF + 16 + 16 * c);
                    const uint8x16_t lo = vtstq_u8(hb, vdupq_n_u8(static_cast<uint8_t>(1 << c)));
                    const uint8x16_t hi = vtstq_u8(hb, vdupq_n_u8(static_cast<uint8_t>(16 << c)));
                    w[c] = vreinterpretq_s8_u8(vsliq_n_u8(q, lo, 4));
                    w[4 + c] = vreinterpretq_s8_u8(vsriq_n_u8(hi, q, 4));
                }
            } else {
                #pragma GCC unroll 8
                for (int c = 0; c < 8; ++c) w[c] = vld1q_s8(reinterpret_cast<const int8_t*>(blk + 8 + 16 * c));
            }
            const float* sd = side + b * SR * NT;
            float32x4_t dx[NV], fs[NV];
            #pragma GCC unroll 2
            for (int v = 0; v < NV; ++v) {  // the table is padded: a tile under 4 reads past its rows
                dx[v] = vld1q_f32(sd + 4 * v);
                if constexpr (P::min) {
                    fs[v] = vld1q_f32(sd + NT + 4 * v);
                }
            }
            static_for<NT>([&](auto tc) {
                constexpr int t = tc;
                const int8_t* x = qx + t * xs + b * QK32;
                const int32x4_t s0 = dup_gpr(P::min ? reinterpret_cast<const int32_t*>(sd + 2 * NT)[t] : P::MAGIC);
                const int32x4_t s = dot32(s0, w, vld1q_s8(x), vld1q_s8(x + 16));
                const float32x4_t f = vsubq_f32(vreinterpretq_f32_s32(s), magic_f);  // (float)i1, exactly
                acc[t] = vfmaq_f32(acc[t], vmulq_laneq_f32(dw, dx[t / 4], t % 4), f);
                if constexpr (P::min) acc[t] = vfmaq_f32(acc[t], vmulq_laneq_f32(h2f4(blk + 8), dx[t / 4], t % 4),
                                                         vdupq_laneq_f32(fs[t / 4], t % 4));
            });
        }
        for (int t = 0; t < NT; ++t) lanes[t][l] = acc[t];
    }
    for (int t = 0; t < NT; ++t) {  // reduce_lanes, four rows at once: (l, l+4), then (l, l+2), then (l, l+1)
        for (int w = L_LANES / 2; w >= 1; w /= 2)
            for (int l = 0; l < w; ++l) lanes[t][l] = vaddq_f32(lanes[t][l], lanes[t][l + w]);
        vst1q_f32(out[t], lanes[t][0]);
    }
}

// Q4_K / Q5_K (Q5), one group against records [t0, t0 + NT). Per block and half sub-block pair (p, half): 8 chunk
// loads give the 8 decoded vectors of sub-block 2p + half, which every record of the tile uses; the records'
// sums, scaled (the telescoped steps above from 2 records on), go to i1. The mins' i2 (and Q5_K's correction)
// come at the block's end, from the scales re-read, so that only w, the records' run / i1 and the steps stay
// live in the sub-block loop: no spills at 8 records. Q5_K values v = n + 16 b are decoded as v - 16 (the fifth
// bits are stored inverted: one cmtst and one sli / sri insert 0xf0 where b = 0), so i1 = (the sdot total) +
// 16 sum_j sc_j S_j, S_j the record's sum over sub-block j, formed as the mins' i2 is (exact int32: |i1|
// <= 8 * 63 * 32 * 31 * 127 < 2^31; the telescoped terms may wrap, the total is exact).
template <bool Q5, int NT>
__attribute__((noinline)) void packed_q45k(const uint8_t* G, int64_t nb, const uint8_t* acts, int t0, const float* side,
                                           float (*out)[4]) {
    constexpr int64_t PB = Q5 ? 704 : 576;
    constexpr int NV = (NT + 3) / 4;
    const ActLayout L = act_layout(GGMLType::Q4_K, nb * QK_K);
    const int8_t* qx = reinterpret_cast<const int8_t*>(acts + static_cast<int64_t>(t0) * L.stride);
    const int64_t xs = L.stride;
    float32x4_t acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = vdupq_n_f32(0.0f);
    const uint8x16_t m4 = vdupq_n_u8(0x0f), m3 = vdupq_n_u8(3);
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = G + b * PB;
        // sc (6 bits) of entries 4j + r: j < 4 in sc0, j >= 4 in sc1; from 2 records on their steps sc_j - sc_j+1 (int8)
        int8x16_t st0, st1;
        {
            const uint8x16_t ls = vld1q_u8(blk + 16), hs = vld1q_u8(blk + 48);
            const uint8x16_t sc0 = vsliq_n_u8(ls, vandq_u8(hs, m3), 4);
            const uint8x16_t sc1 = vsliq_n_u8(vshrq_n_u8(ls, 4), vandq_u8(vshrq_n_u8(hs, 2), m3), 4);
            st0 = vreinterpretq_s8_u8(sc0);
            st1 = vreinterpretq_s8_u8(sc1);
            if constexpr (NT > 1) {
                st0 = vsubq_s8(st0, vextq_s8(st0, st1, 4));
                st1 = vsubq_s8(st1, vextq_s8(st1, vdupq_n_s8(0), 4));
            }
        }
        int8_t steps[32];  // read per sub-block pair in the loop below, which is not unrolled (see there)
        vst1q_s8(steps, st0);
        vst1q_s8(steps + 16, st1);
        int32x4_t i1[NT], run[NT];
        for (int t = 0; t < NT; ++t) i1[t] = run[t] = vdupq_n_s32(0);
        // A rolled loop: unrolled, GCC schedules later halves' loads and decodes early and spills them.
        #pragma GCC unroll 1
        for (int p = 0; p < 4; ++p) {
            const int16x8_t sp = vmovl_s8(vld1_s8(steps + 8 * p));  // sub-blocks 2p, 2p + 1 (lanes 4k + r)
            #pragma GCC unroll 2
            for (int half = 0; half < 2; ++half) {
                int8x16_t w[8];
                const uint8_t* bq = fresh(blk + 128 * p);  // the high half reloads its chunks
                #pragma GCC unroll 8
                for (int c = 0; c < 8; ++c) {
                    const uint8x16_t q = vld1q_u8(bq + 64 + 16 * c);
                    if constexpr (Q5) {
                        const uint8x16_t bit = vreinterpretq_u8_s32(dup_gpr(0x01010101 << (2 * p + half)));
                        const uint8x16_t h = vtstq_u8(vld1q_u8(blk + 576 + 16 * c), bit);
                        w[c] = vreinterpretq_s8_u8(half ? vsriq_n_u8(h, q, 4) : vsliq_n_u8(q, h, 4));
                    } else {
                        w[c] = vreinterpretq_s8_u8(half ? vshrq_n_u8(q, 4) : vandq_u8(q, m4));
                    }
                }
                // the (steps of) sub-block 2p + half, lanes = rows
                const int32x4_t sj = half ? vmovl_high_s16(sp) : vmovl_s16(vget_low_s16(sp));
                static_for<NT>([&](auto tc) {
                    constexpr int t = tc;
                    const int8_t* x = qx + t * xs + b * QK_K + 64 * p + 32 * half;
                    // scale_steps: i1 = sum of (sc_j - sc_j+1) x the running sum (one record: each sub-block's own)
                    run[t] = dot32_chain(NT == 1 ? vdupq_n_s32(0) : run[t], w, vld1q_s8(x), vld1q_s8(x + 16));
                    i1[t] = vmlaq_s32(i1[t], run[t], sj);
                });
            }
        }
        // i2 = sum_j mn_j S_j (and Q5_K's sum_j sc_j S_j) as lane dots: S_j = 32 a_j + b_j with int8 a_j, b_j (the
        // side table), the mins (scales) transposed to rows x 4 sub-blocks; exact in int32
        int8x16_t mt0, mt1, st0t, st1t;
        {
            const uint8x16_t tr = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};  // (j, r) -> (r, j)
            const uint8x16_t ms = vld1q_u8(blk + 32), hs = vld1q_u8(blk + 48);
            mt0 = vreinterpretq_s8_u8(vqtbl1q_u8(vsliq_n_u8(ms, vandq_u8(vshrq_n_u8(hs, 4), m3), 4), tr));
            mt1 = vreinterpretq_s8_u8(vqtbl1q_u8(vsliq_n_u8(vshrq_n_u8(ms, 4), vshrq_n_u8(hs, 6), 4), tr));
            if constexpr (Q5) {
                const uint8x16_t ls = vld1q_u8(blk + 16);
                st0t = vreinterpretq_s8_u8(vqtbl1q_u8(vsliq_n_u8(ls, vandq_u8(hs, m3), 4), tr));
                st1t = vreinterpretq_s8_u8(vqtbl1q_u8(vsliq_n_u8(vshrq_n_u8(ls, 4), vandq_u8(vshrq_n_u8(hs, 2), m3), 4), tr));
            }
        }
        const uint16x8_t hd = vld1q_u16(reinterpret_cast<const uint16_t*>(blk));
        const float32x4_t dw = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(hd)));
        const float32x4_t dm = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(hd)));
        const float* sd = side + b * 5 * NT;
        float32x4_t dx[NV];
        for (int v = 0; v < NV; ++v) dx[v] = vld1q_f32(sd + 4 * v);  // padded: a tile under 4 reads past
        static_for<NT>([&](auto tc) {
            constexpr int t = tc;
            const int8x16_t ab = vld1q_s8(reinterpret_cast<const int8_t*>(sd + NT + 4 * t));  // a_0..7, b_0..7
            int32x4_t i2 = dot_lane<0>(dup_gpr(0), mt0, ab);
            i2 = vshlq_n_s32(dot_lane<1>(i2, mt1, ab), 5);
            i2 = dot_lane<3>(dot_lane<2>(i2, mt0, ab), mt1, ab);
            if constexpr (Q5) {  // + 16 sum_j sc_j S_j
                int32x4_t c = dot_lane<0>(dup_gpr(0), st0t, ab);
                c = vshlq_n_s32(dot_lane<1>(c, st1t, ab), 5);
                c = dot_lane<3>(dot_lane<2>(c, st0t, ab), st1t, ab);
                i1[t] = vaddq_s32(i1[t], vshlq_n_s32(c, 4));
            }
            const float dxt = vgetq_lane_f32(dx[t / 4], t % 4);
            acc[t] = vfmaq_f32(acc[t], vmulq_n_f32(dw, dxt), vcvtq_f32_s32(i1[t]));
            acc[t] = vfmsq_f32(acc[t], vmulq_n_f32(dm, dxt), vcvtq_f32_s32(i2));  // fmaf(-(dm dx), i2, acc)
        });
    }
    for (int t = 0; t < NT; ++t) vst1q_f32(out[t], acc[t]);
}

// Q6_K, one group against records [t0, t0 + NT). Per block and sub-block k: 3 loads give the 4 chunk vectors of
// the four rows (layout: quant/repack.cpp), decoded with 7 shifts and inserts (v_0, v_1, v_3: one arithmetic
// shift of their byte; v_2 gathered from three 2-bit pieces), then per record 4 lane dots into the running
// sum and i1 += (the scale steps) x the sum (scale_steps from 2 records on; one record: each sub-block's own
// sum). The loop over sub-blocks stays rolled, as packed_q45k's.
template <int NT>
__attribute__((noinline)) void packed_q6k(const uint8_t* G, int64_t nb, const uint8_t* acts, int t0, const float* side,
                                          float (*out)[4]) {
    constexpr int NV = (NT + 3) / 4;
    const ActLayout L = act_layout(GGMLType::Q6_K, nb * QK_K);
    const int8_t* qx = reinterpret_cast<const int8_t*>(acts + static_cast<int64_t>(t0) * L.stride);
    const int64_t xs = L.stride;
    float32x4_t acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = G + b * 840;
        int8_t sc[72];  // the 64 scales (sub-block k, row r at 4k + r), then zeros: sc_16 = 0 for the last step
        #pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) vst1q_s8(sc + 16 * v, vld1q_s8(reinterpret_cast<const int8_t*>(blk + 8 + 16 * v)));
        vst1_s8(sc + 64, vdup_n_s8(0));
        int32x4_t i1[NT], run[NT];
        for (int t = 0; t < NT; ++t) i1[t] = run[t] = vdupq_n_s32(0);
        const int8_t* xk = qx + b * QK_K;
        #pragma GCC unroll 1
        for (int k = 0; k < 16; ++k) {
            const uint8_t* tk = blk + 72 + 48 * k;
            const int8x16_t P = vld1q_s8(reinterpret_cast<const int8_t*>(tk));
            const int8x16_t Q = vld1q_s8(reinterpret_cast<const int8_t*>(tk + 16));
            const int8x16_t R = vld1q_s8(reinterpret_cast<const int8_t*>(tk + 32));
            int8x16_t w[4];
            w[0] = vshrq_n_s8(P, 2);
            w[1] = vshrq_n_s8(Q, 2);
            w[3] = vshrq_n_s8(R, 2);
            const int8x16_t v2 = vsliq_n_s8(vsliq_n_s8(P, Q, 2), R, 4);  // bits 0-5: the pieces of v_2
            w[2] = vshrq_n_s8(vshlq_n_s8(v2, 2), 2);
            const int16x8_t s2 = vmovl_s8(vld1_s8(sc + 4 * k));  // sc_k (low half), sc_k+1 (high half), 4 rows each
            const int32x4_t sj = NT > 1 ? vmovl_s16(vsub_s16(vget_low_s16(s2), vget_high_s16(s2))) : vmovl_s16(vget_low_s16(s2));
            static_for<NT>([&](auto tc) {
                constexpr int t = tc;
                const int8x16_t x = vld1q_s8(xk + t * xs + 16 * k);
                int32x4_t d = dot_lane<0>(NT == 1 ? vdupq_n_s32(0) : run[t], w[0], x);
                d = dot_lane<1>(d, w[1], x);
                d = dot_lane<2>(d, w[2], x);
                run[t] = dot_lane<3>(d, w[3], x);
                i1[t] = vmlaq_s32(i1[t], run[t], sj);  // |i1| <= 16 * 128 * 16 * 32 * 127 < 2^31 (telescoped terms may wrap)
            });
        }
        const float32x4_t dw = h2f4(blk);
        float32x4_t dx[NV];
        for (int v = 0; v < NV; ++v) dx[v] = vld1q_f32(side + b * NT + 4 * v);  // padded: a tile under 4 reads past
        static_for<NT>([&](auto tc) {
            constexpr int t = tc;
            acc[t] = vfmaq_f32(acc[t], vmulq_laneq_f32(dw, dx[t / 4], t % 4), vcvtq_f32_s32(i1[t]));
        });
    }
    for (int t = 0; t < NT; ++t) vst1q_f32(out[t], acc[t]);
}

template <int NT>
void packed_group(GGMLType wt, const uint8_t* G, int64_t nb, const uint8_t* acts, int t0, const float* side,
                  float (*out)[4]) {
    switch (wt) {
        case GGMLType::Q4_0: return packed_legacy<GGMLType::Q4_0, NT>(G, nb, acts, t0, side, out);
        case GGMLType::Q4_1: return packed_legacy<GGMLType::Q4_1, NT>(G, nb, acts, t0, side, out);
        case GGMLType::Q5_0: return packed_legacy<GGMLType::Q5_0, NT>(G, nb, acts, t0, side, out);
        case GGMLType::Q5_1: return packed_legacy<GGMLType::Q5_1, NT>(G, nb, acts, t0, side, out);
        case GGMLType::Q8_0: return packed_legacy<GGMLType::Q8_0, NT>(G, nb, acts, t0, side, out);
        default: break;
    }
    if constexpr (NT <= PK_TILE_K) {
        if (wt == GGMLType::Q4_K) packed_q45k<false, NT>(G, nb, acts, t0, side, out);
        else if (wt == GGMLType::Q5_K) packed_q45k<true, NT>(G, nb, acts, t0, side, out);
        else packed_q6k<NT>(G, nb, acts, t0, side, out);
    }
}

#if LG_NEON_I8MM
#include "quant/arm/neon_packed_mm.h"  // the smmla kernels, inside this namespace
#endif

// The side table of one tile (side_rows above), from the records' prepared activations.
void fill_side(GGMLType wt, int64_t nb, const uint8_t* acts, int t0, int nt, float* side) {
    const ActLayout L = act_layout(wt, nb * quant_block_elems(wt));
    const int SR = side_rows(wt);
    for (int t = 0; t < nt; ++t) {
        const uint8_t* rec = acts + static_cast<int64_t>(t0 + t) * L.stride;
        const float* dx = reinterpret_cast<const float*>(rec + L.d_off);
        const int16_t* sums = reinterpret_cast<const int16_t*>(rec + L.sums_off);
        for (int64_t b = 0; b < nb; ++b) {
            float* sd = side + b * SR * nt + t;
            sd[0] = dx[b];
            if (SR == 3) {  // Q4_1 / Q5_1: the block sum, and the sdot start (LegacyPk)
                sd[nt] = static_cast<float>(sums[b]);
                const int32_t start = (wt == GGMLType::Q4_1 ? LegacyPk<GGMLType::Q4_1>::MAGIC + 128 * sums[b]
                                                            : LegacyPk<GGMLType::Q5_1>::MAGIC + 16 * sums[b]);
                std::memcpy(sd + 2 * nt, &start, 4);
            } else if (SR == 5) {  // Q4_K / Q5_K: the split sub-block sums (record t's 16 bytes at row 1 + 4t - t)
                int8_t ab[16];
                for (int j = 0; j < 8; ++j) {
                    const int S = sums[16 * b + 2 * j] + sums[16 * b + 2 * j + 1];  // |S| <= 32 * 127
                    ab[j] = static_cast<int8_t>(S >> 5);  // arithmetic shift (C++20; GCC and Clang always)
                    ab[8 + j] = static_cast<int8_t>(S & 31);
                }
                std::memcpy(sd - t + nt + 4 * t, ab, 16);
            }
        }
    }
}

int tile_of(GGMLType wt, int left) {  // tiles of 8, 4, 2, 1 records: a pair (q8x2) stays in one tile
    const int most = is_legacy(wt) ? PK_TILE : PK_TILE_K;
    int nt = 1;
    while (nt * 2 <= most && nt * 2 <= left) nt *= 2;
    return nt;
}

}  // namespace

bool matmul_packed(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec,
                   float* y, int64_t ldy, int pair) {
    if (!pack_type(wt)) return false;
    const int64_t gb = PACK_ROWS * quant_row_bytes(wt, K), nb = K / quant_block_elems(wt);
    // every tile's side table once per call (tile t0's at t0 * nb * side_rows), read by every group
    thread_local std::vector<float> side;
    side.resize(static_cast<size_t>(n_rec * nb * side_rows(wt) + 8));
    for (int t0 = 0; t0 < n_rec;) {
        const int nt = tile_of(wt, n_rec - t0);
        fill_side(wt, nb, acts, t0, nt, side.data() + t0 * nb * side_rows(wt));
        t0 += nt;
    }
#if LG_NEON_I8MM
    // tiles start at even records (tile_of: 8, 4, 2, then 1), so tile t0 reads pairs from t0 / 2 on
    const bool mm = mm_type(wt);
    thread_local std::vector<int8_t> xi;
    if (mm) interleave_pairs(wt, K, acts, n_rec, xi);
#endif
    for (int64_t r = r0; r < r1; r += PACK_ROWS) {
        const uint8_t* G = W + r / PACK_ROWS * gb;
        for (int t0 = 0; t0 < n_rec;) {
            const int nt = tile_of(wt, n_rec - t0);
            const float* sd = side.data() + t0 * nb * side_rows(wt);
            float out[PK_TILE][4] = {};
#if LG_NEON_I8MM
            if (mm) {
                const int8_t* xp = xi.data() + t0 * K;
                if (nt == 8) mm_group<8>(wt, G, nb, xp, 2 * K, sd, out);
                else if (nt == 4) mm_group<4>(wt, G, nb, xp, 2 * K, sd, out);
                else if (nt == 2) mm_group<2>(wt, G, nb, xp, 2 * K, sd, out);
                else mm_group<1>(wt, G, nb, xp, 2 * K, sd, out);
            } else
#endif
            if (nt == 8) packed_group<8>(wt, G, nb, acts, t0, sd, out);
            else if (nt == 4) packed_group<4>(wt, G, nb, acts, t0, sd, out);
            else if (nt == 2) packed_group<2>(wt, G, nb, acts, t0, sd, out);
            else packed_group<1>(wt, G, nb, acts, t0, sd, out);
            for (int i = 0; i < PACK_ROWS; ++i) {
                float col[PK_TILE];
                for (int t = 0; t < nt; ++t) col[t] = out[t][i];
                store_out(y, ldy, r + i, t0, col, nt, pair);
            }
            t0 += nt;
        }
    }
    return true;
}

#if LG_NEON_I8MM
bool row_pairs(GGMLType wt) { return mm_type(wt); }
#endif

}  // namespace lg::quant::LG_NEON_NS

#endif

// aarch64 NEON kernels (vdotq_s32 in the neon_dotprod variant, e.g. RK3588's Cortex-A76):
// integer block sums in NEON, float steps in the canonical order of blocks.h, so results
// are bit-identical to scalar.cpp. Knows nothing about threads or CPUs. Empty on other targets.
#include "quant/arm/neon.h"

#if LG_SIMD_NEON
#include <cmath>
#include <type_traits>

namespace lg::quant::LG_NEON_NS {

namespace {

// ---- K-quants -------------------------------------------------------------------------------
// A block decoded to 256 signed values (Q6_K: q - 32; Q4_K/Q5_K: q) and integer scales.
struct KBlock {
    alignas(16) int8_t v[QK_K];
    int sc[16];                  // Q6_K: per 16 values; Q4_K/Q5_K: sc[0..7], per 32 values
    alignas(16) int16_t mn[8];   // per 32 values (Q4_K/Q5_K)
    float dw, dm;
};

// q4k_scale_min for j = 0..7 at once: lane j < 4 takes sc = a_j & 63, mn = b_j & 63; lane j >= 4 (k = j - 4)
// sc = (c_k & 15) | (a_k >> 6) << 4, mn = (c_k >> 4) | (b_k >> 6) << 4, where a, b, c are scale bytes 0-3,
// 4-7, 8-11 (each table lookup repeats its 4 bytes in both halves). Reads 16 bytes from s: the block's
// qh or qs follow its 12 scale bytes.
inline void q4k_unpack_scales(const uint8_t* s, KBlock* o) {
    const Scales8 v = q4k_scales(s);       // neon.h: the same unpacking, in registers
    vst1q_s32(o->sc, v.lo);
    vst1q_s32(o->sc + 4, v.hi);
    vst1q_s16(o->mn, v.mn);
}

void decode(const BlockQ4K* b, KBlock* o) {
    o->dw = h2f(b->d);
    o->dm = h2f(b->dmin);
    q4k_unpack_scales(b->scales, o);
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    for (int j = 0; j < 4; ++j) {  // qs[32j .. 32j+32): low nibbles sub-block 2j, high 2j+1
        for (int h = 0; h < 2; ++h) {
            uint8x16_t q = vld1q_u8(b->qs + 32 * j + 16 * h);
            vst1q_s8(o->v + 64 * j + 16 * h, vreinterpretq_s8_u8(vandq_u8(q, m4)));
            vst1q_s8(o->v + 64 * j + 32 + 16 * h, vreinterpretq_s8_u8(vshrq_n_u8(q, 4)));
        }
    }
}

void decode(const BlockQ5K* b, KBlock* o) {
    o->dw = h2f(b->d);
    o->dm = h2f(b->dmin);
    q4k_unpack_scales(b->scales, o);
    const uint8x16_t m4 = vdupq_n_u8(0x0f), one = vdupq_n_u8(1);
    for (int j = 0; j < 4; ++j) {
        for (int h = 0; h < 2; ++h) {
            uint8x16_t q = vld1q_u8(b->qs + 32 * j + 16 * h);
            uint8x16_t qh = vld1q_u8(b->qh + 16 * h);  // element 32s + l: bit s of qh[l]
            int8x16_t sh_lo = vdupq_n_s8(static_cast<int8_t>(-(2 * j))), sh_hi = vdupq_n_s8(static_cast<int8_t>(-(2 * j + 1)));
            uint8x16_t b_lo = vshlq_n_u8(vandq_u8(vshlq_u8(qh, sh_lo), one), 4);
            uint8x16_t b_hi = vshlq_n_u8(vandq_u8(vshlq_u8(qh, sh_hi), one), 4);
            vst1q_s8(o->v + 64 * j + 16 * h, vreinterpretq_s8_u8(vorrq_u8(vandq_u8(q, m4), b_lo)));
            vst1q_s8(o->v + 64 * j + 32 + 16 * h, vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(q, 4), b_hi)));
        }
    }
}

void decode(const BlockQ6K* b, KBlock* o) {
    o->dw = h2f(b->d);
    o->dm = 0.0f;
    for (int k = 0; k < 16; ++k) o->sc[k] = b->scales[k];
    const uint8x16_t m4 = vdupq_n_u8(0x0f), m3 = vdupq_n_u8(3);
    const int8x16_t off = vdupq_n_s8(32);
    for (int h = 0; h < 2; ++h) {        // elements 128h + w
        for (int c = 0; c < 2; ++c) {    // w % 32 in [16c, 16c + 16)
            uint8x16_t qh = vld1q_u8(b->qh + 32 * h + 16 * c);
            for (int s = 0; s < 4; ++s) {  // w / 32
                uint8x16_t ql = vld1q_u8(b->ql + 64 * h + 32 * (s % 2) + 16 * c);
                uint8x16_t lo = s < 2 ? vandq_u8(ql, m4) : vshrq_n_u8(ql, 4);
                uint8x16_t hi = vandq_u8(vshlq_u8(qh, vdupq_n_s8(static_cast<int8_t>(-2 * s))), m3);
                int8x16_t q = vreinterpretq_s8_u8(vorrq_u8(lo, vshlq_n_u8(hi, 4)));
                vst1q_s8(o->v + 128 * h + 32 * s + 16 * c, vsubq_s8(q, off));
            }
        }
    }
}

template <typename Block>
void reduce_kquant(const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec, float* y,
                   int64_t ldy, GGMLType wt, int pair) {
    constexpr bool kQ6 = std::is_same<Block, BlockQ6K>::value;
    const int64_t nb = K / QK_K;
    const ActLayout L = act_layout(kquant_type<Block>(), K);  // constant: no per-type versions of the loops
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
                    // sc_k times each lane's partial, one horizontal add per block (not per 16 values):
                    // the same exact integer. |lane| <= 4 * 32 * 127 * 128 * 16 < 2^31. Q4_K/Q5_K share one
                    // scale per 32 values: both halves' dots go into one partial before the multiply.
                    int32x4_t i1v = vdupq_n_s32(0);
                    if constexpr (kQ6) {
                        for (int k = 0; k < 16; ++k)
                            i1v = vmlaq_n_s32(i1v, dot16(vdupq_n_s32(0), vld1q_s8(dec.v + 16 * k), vld1q_s8(qx + 16 * k)),
                                              dec.sc[k]);
                    } else {
                        for (int j = 0; j < 8; ++j) {
                            const int32x4_t p = dot16(vdupq_n_s32(0), vld1q_s8(dec.v + 32 * j), vld1q_s8(qx + 32 * j));
                            i1v = vmlaq_n_s32(i1v, dot16(p, vld1q_s8(dec.v + 32 * j + 16), vld1q_s8(qx + 32 * j + 16)),
                                              dec.sc[j]);
                        }
                    }
                    const int32_t i1 = vaddvq_s32(i1v);
                    acc[t] = std::fma(dec.dw * dx, static_cast<float>(i1), acc[t]);
                    if constexpr (!kQ6) {  // i2 = sum_j mn_j (s16[2j] + s16[2j + 1]); |pair sums| <= 32 * 127
                        const int16x8_t xs = vpaddq_s16(vld1q_s16(s16), vld1q_s16(s16 + 8));
                        const int16x8_t mn = vld1q_s16(dec.mn);
                        const int32_t i2 = vaddvq_s32(vmlal_high_s16(vmull_s16(vget_low_s16(mn), vget_low_s16(xs)), mn, xs));
                        acc[t] = std::fma(-(dec.dm * dx), static_cast<float>(i2), acc[t]);
                    }
                }
            }
            store_out(y, ldy, r, t0, acc, nt, pair);
        }
    }
}

}  // namespace

namespace {

void reduce(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec, float* y,
            int64_t ldy, int pair) {
    if (is_legacy(wt)) reduce_legacy(wt, W, K, r0, r1, acts, n_rec, y, ldy, pair);
    else if (wt == GGMLType::Q4_K) reduce_kquant<BlockQ4K>(W, K, r0, r1, acts, n_rec, y, ldy, wt, pair);
    else if (wt == GGMLType::Q5_K) reduce_kquant<BlockQ5K>(W, K, r0, r1, acts, n_rec, y, ldy, wt, pair);
    else reduce_kquant<BlockQ6K>(W, K, r0, r1, acts, n_rec, y, ldy, wt, pair);
}

void rowlane(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec, float* y,
             int64_t ldy, int pair) {
    if (is_legacy(wt)) rowlane_legacy(wt, W, K, r0, r1, acts, n_rec, y, ldy, pair);
    else if (wt == GGMLType::Q4_K) rowlane_kquant_rows<BlockQ4K>(W, K, r0, r1, acts, n_rec, y, ldy, wt, pair);
    else rowlane_kquant_rows<BlockQ5K>(W, K, r0, r1, acts, n_rec, y, ldy, wt, pair);  // plan.h: never Q6_K
}

}  // namespace

bool matmul(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* act_buf,
            const float* x, int n_rec, float* y, int64_t ldy, int pair) {
    const neon::Plan p = neon::plan(wt, K, n_rec);  // one plan for every NEON variant
    if (p.rest == Kernel::none) return false;
    int64_t r = r0;
    if (p.rows4 == Kernel::rowlane) {
        r = r0 + (r1 - r0) / neon::ROWLANE_ROWS * neon::ROWLANE_ROWS;
        rowlane(wt, W, K, r0, r, act_buf, n_rec, y, ldy, pair);
    }
    if (r < r1) reduce(wt, W, K, r, r1, act_buf, n_rec, y, ldy, pair);
    return true;
}

bool quantize_blocks(const float* x, int64_t n_blocks, int ablk, int8_t* qs, float* d) {
    const float32x4_t lo = vdupq_n_f32(-127.0f), hi = vdupq_n_f32(127.0f);
    for (int64_t b = 0; b < n_blocks; ++b) {
        const float* xb = x + b * ablk;
        float32x4_t m = vdupq_n_f32(0.0f);
        for (int i = 0; i < ablk; i += 4) m = vmaxq_f32(m, vabsq_f32(vld1q_f32(xb + i)));
        const float amax = vmaxvq_f32(m);
        const float32x4_t id = vdupq_n_f32(amax > 0.0f ? 127.0f / amax : 0.0f);
        for (int i = 0; i < ablk; i += 8) {
            int32x4_t q[2];
            for (int h = 0; h < 2; ++h) {  // round half to even, as nearbyint does
                float32x4_t v = vrndnq_f32(vmulq_f32(vld1q_f32(xb + i + 4 * h), id));
                q[h] = vcvtq_s32_f32(vminq_f32(hi, vmaxq_f32(lo, v)));
            }
            vst1_s8(qs + b * ablk + i, vmovn_s16(vcombine_s16(vmovn_s32(q[0]), vmovn_s32(q[1]))));
        }
        d[b] = amax / 127.0f;
    }
    return true;
}

}  // namespace lg::quant::LG_NEON_NS

#endif

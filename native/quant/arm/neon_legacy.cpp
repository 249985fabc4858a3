// aarch64 NEON kernel for legacy 32-blocks (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0): the reducing kernel, integer
// block sums in NEON, float steps in the canonical lane order of blocks.h, so results are bit-identical to
// scalar.cpp. Knows nothing about threads. Empty on other targets.
#include "quant/arm/neon.h"

#if LG_SIMD_NEON
#include <cmath>

namespace lg::quant::LG_NEON_NS {

namespace {


// ---- legacy 32-blocks ---------------------------------------------------------------------
inline void legacy_decode(GGMLType wt, const uint8_t* blk, int8x16_t* v0, int8x16_t* v1, float* dw, float* dm) {
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    const LegacyHeader h = legacy_header(wt, blk);
    *dw = h2f(h.d);
    *dm = wt == GGMLType::Q4_1 || wt == GGMLType::Q5_1 ? h2f(h.m) : 0.0f;
    if (wt == GGMLType::Q8_0) {
        *v0 = vld1q_s8(reinterpret_cast<const int8_t*>(blk + h.qs_off));
        *v1 = vld1q_s8(reinterpret_cast<const int8_t*>(blk + h.qs_off + 16));
        return;
    }
    const bool five = wt == GGMLType::Q5_0 || wt == GGMLType::Q5_1;
    const uint32_t qh = h.qh;
    uint8x16_t qs = vld1q_u8(blk + h.qs_off);
    uint8x16_t lo = vandq_u8(qs, m4), hi = vshrq_n_u8(qs, 4);
    if (five) {  // bit e of qh -> bit 4 of element e: byte e / 8 of qh to byte e, tested against bit e % 8
        // (8 instructions, where a per-element loop would run 32 iterations for every (row, block))
        const uint8x16_t q = vreinterpretq_u8_u32(vdupq_n_u32(qh));
        const uint8x16_t bits = vreinterpretq_u8_u64(vdupq_n_u64(0x8040201008040201ull));
        const uint8x16_t sel_lo = vcombine_u8(vdup_n_u8(0), vdup_n_u8(1)), sel_hi = vcombine_u8(vdup_n_u8(2), vdup_n_u8(3));
        const uint8x16_t bit4 = vdupq_n_u8(0x10);
        lo = vorrq_u8(lo, vandq_u8(vtstq_u8(vqtbl1q_u8(q, sel_lo), bits), bit4));
        hi = vorrq_u8(hi, vandq_u8(vtstq_u8(vqtbl1q_u8(q, sel_hi), bits), bit4));
    }
    const int8_t sub = wt == GGMLType::Q4_0 ? 8 : wt == GGMLType::Q5_0 ? 16 : 0;
    *v0 = vsubq_s8(vreinterpretq_s8_u8(lo), vdupq_n_s8(sub));
    *v1 = vsubq_s8(vreinterpretq_s8_u8(hi), vdupq_n_s8(sub));
}

}  // namespace

void reduce_legacy(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec,
                   float* y, int64_t ldy, int pair) {
    const int64_t nb = K / QK32, bb = ggml_bytes_per_block32(wt);
    const bool has_min = wt == GGMLType::Q4_1 || wt == GGMLType::Q5_1;
    const ActLayout L = act_layout(wt, K);
    for (int t0 = 0; t0 < n_rec; t0 += R_TILE) {
        const int nt = n_rec - t0 < R_TILE ? n_rec - t0 : R_TILE;
        for (int64_t r = r0; r < r1; ++r) {
            const uint8_t* row = W + r * nb * bb;
            float lanes[R_TILE][L_LANES] = {};
            for (int64_t b = 0; b < nb; ++b) {
                int8x16_t v0, v1;
                float dw, dm;
                legacy_decode(wt, row + b * bb, &v0, &v1, &dw, &dm);
                for (int t = 0; t < nt; ++t) {
                    const uint8_t* rec = acts + static_cast<int64_t>(t0 + t) * L.stride;
                    const int8_t* qx = reinterpret_cast<const int8_t*>(rec) + b * QK32;
                    const int16_t sum = reinterpret_cast<const int16_t*>(rec + L.sums_off)[b];
                    const float dx = reinterpret_cast<const float*>(rec + L.d_off)[b];
                    int32x4_t p = dot16(vdupq_n_s32(0), v0, vld1q_s8(qx));
                    p = dot16(p, v1, vld1q_s8(qx + 16));
                    float& lane = lanes[t][b % L_LANES];
                    lane = std::fma(dw * dx, static_cast<float>(vaddvq_s32(p)), lane);
                    if (has_min) lane = std::fma(dm * dx, static_cast<float>(sum), lane);
                }
            }
            float out[R_TILE];
            for (int t = 0; t < nt; ++t) out[t] = reduce_lanes(lanes[t]);
            store_out(y, ldy, r, t0, out, nt, pair);
        }
    }
}

}  // namespace lg::quant::LG_NEON_NS

#endif

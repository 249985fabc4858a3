// aarch64 NEON kernels for legacy 32-blocks (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0): the reducing kernel (one row at
// a time) and the row-lane kernel (four rows, one float lane each: one vector op does a float step of four
// rows). Integer block sums in NEON, float steps in the canonical lane order of blocks.h, so results are
// bit-identical to scalar.cpp. Knows nothing about threads. Empty on other targets.
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

// Rows [r, r + 4) against records [t0, t0 + NT): out[t][i] for row r + i. Accumulator lanes[t][b % L_LANES]
// holds the four rows' canonical lane b % L_LANES; blocks run eight at a time so the index is a constant.
// Not inlined: one symbol per type and tile size, for tools/bench/bench_arm.py.
template <GGMLType WT, int NT>
__attribute__((noinline)) void rowlane_legacy(const uint8_t* W, int64_t K, int64_t r, const uint8_t* acts, int t0, float (*out)[4]) {
    constexpr bool has_min = WT == GGMLType::Q4_1 || WT == GGMLType::Q5_1;
    const int64_t nb = K / QK32, bb = ggml_bytes_per_block32(WT), stride = nb * bb;
    const ActLayout L = act_layout(WT, K);
    const uint8_t* row = W + r * stride;
    const uint8_t* rec[NT];
    float32x4_t lanes[NT][L_LANES];
    for (int t = 0; t < NT; ++t) {
        rec[t] = acts + static_cast<int64_t>(t0 + t) * L.stride;
        for (int l = 0; l < L_LANES; ++l) lanes[t][l] = vdupq_n_f32(0.0f);
    }
    for (int64_t b8 = 0; b8 < nb; b8 += L_LANES) {
#pragma GCC unroll 8
        for (int l = 0; l < L_LANES; ++l) {
            const int64_t b = b8 + l;
            if (b >= nb) break;
            const uint8_t* blk = row + b * bb;
            int8x16_t v[4][2];
            float dw_, dm_;  // scalar scales unused: the four rows' come as one vector below
            for (int i = 0; i < 4; ++i) legacy_decode(WT, blk + i * stride, &v[i][0], &v[i][1], &dw_, &dm_);
            const float32x4_t dw = h2f_rows(blk, stride);
            for (int t = 0; t < NT; ++t) {
                const int8_t* qx = reinterpret_cast<const int8_t*>(rec[t]) + b * QK32;
                const int8x16_t x0 = vld1q_s8(qx), x1 = vld1q_s8(qx + 16);
                int32x4_t p[4];
                for (int i = 0; i < 4; ++i) p[i] = dot16(dot16(vdupq_n_s32(0), v[i][0], x0), v[i][1], x1);
                const float dx = reinterpret_cast<const float*>(rec[t] + L.d_off)[b];
                const int32x4_t i1 = vpaddq_s32(vpaddq_s32(p[0], p[1]), vpaddq_s32(p[2], p[3]));
                lanes[t][l] = vfmaq_f32(lanes[t][l], vmulq_n_f32(dw, dx), vcvtq_f32_s32(i1));
                if constexpr (has_min) {
                    const float sum = reinterpret_cast<const int16_t*>(rec[t] + L.sums_off)[b];
                    lanes[t][l] = vfmaq_f32(lanes[t][l], vmulq_n_f32(h2f_rows(blk + 2, stride), dx), vdupq_n_f32(sum));
                }
            }
        }
    }
    for (int t = 0; t < NT; ++t) {  // reduce_lanes, four rows at once: (l, l+4), then (l, l+2), then (l, l+1)
        for (int w = L_LANES / 2; w >= 1; w /= 2)
            for (int l = 0; l < w; ++l) lanes[t][l] = vaddq_f32(lanes[t][l], lanes[t][l + w]);
        vst1q_f32(out[t], lanes[t][0]);
    }
}

template <GGMLType WT>
void rowlane_legacy_rows(const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec,
                         float* y, int64_t ldy, int pair) {
    for (int64_t r = r0; r < r1; r += neon::ROWLANE_ROWS) {
        for (int t0 = 0; t0 < n_rec;) {  // tiles of 2, then 1 (only the last of an odd count: pairs stay whole)
            const int nt = n_rec - t0 >= 2 ? 2 : 1;
            float out[2][4];
            if (nt == 2) rowlane_legacy<WT, 2>(W, K, r, acts, t0, out);
            else rowlane_legacy<WT, 1>(W, K, r, acts, t0, out);
            for (int i = 0; i < neon::ROWLANE_ROWS; ++i) {
                const float col[2] = {out[0][i], out[1][i]};
                store_out(y, ldy, r + i, t0, col, nt, pair);
            }
            t0 += nt;
        }
    }
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

// Rows [r0, r1) in groups of neon::ROWLANE_ROWS (r1 - r0 a multiple of it), every record.
void rowlane_legacy(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec,
                    float* y, int64_t ldy, int pair) {
    switch (wt) {
        case GGMLType::Q4_0: return rowlane_legacy_rows<GGMLType::Q4_0>(W, K, r0, r1, acts, n_rec, y, ldy, pair);
        case GGMLType::Q4_1: return rowlane_legacy_rows<GGMLType::Q4_1>(W, K, r0, r1, acts, n_rec, y, ldy, pair);
        case GGMLType::Q5_0: return rowlane_legacy_rows<GGMLType::Q5_0>(W, K, r0, r1, acts, n_rec, y, ldy, pair);
        case GGMLType::Q5_1: return rowlane_legacy_rows<GGMLType::Q5_1>(W, K, r0, r1, acts, n_rec, y, ldy, pair);
        default: return rowlane_legacy_rows<GGMLType::Q8_0>(W, K, r0, r1, acts, n_rec, y, ldy, pair);
    }
}

}  // namespace lg::quant::LG_NEON_NS

#endif

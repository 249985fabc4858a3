// The scalar reference matmul: portable, weight-stationary (a weight block is decoded once per
// tile of activation vectors), and the definition of the canonical order in blocks.h.
// Knows nothing about threads (callers split rows) or SIMD (x86/, arm/).
#include <cmath>

#include "quant/blocks.h"
#include "quant/kernels.h"

namespace lg {

namespace {

constexpr int R_TILE = 8;  // activation vectors sharing one decode of a weight block

// A weight block decoded to integers: values v[], one integer scale per group of `gsize`
// values, optional integer mins per 32 (K-quants), float scales.
struct Decoded {
    int v[QK_K];
    int sc[QK_K / 16];
    int mn[8];
    float dw, dm;  // block scale; second scale (dmin for K-quants, m for Q4_1/Q5_1)
};

void decode_q4k(const BlockQ4K* b, Decoded* o) {
    o->dw = fp16_to_f32(b->d);
    o->dm = fp16_to_f32(b->dmin);
    for (int j = 0; j < 8; ++j) {
        q4k_scale_min(b->scales, j, &o->sc[j], &o->mn[j]);
        const int shift = 4 * (j % 2);
        for (int l = 0; l < 32; ++l) o->v[32 * j + l] = (b->qs[32 * (j / 2) + l] >> shift) & 0xf;
    }
}

void decode_q5k(const BlockQ5K* b, Decoded* o) {
    o->dw = fp16_to_f32(b->d);
    o->dm = fp16_to_f32(b->dmin);
    for (int j = 0; j < 8; ++j) {
        q4k_scale_min(b->scales, j, &o->sc[j], &o->mn[j]);
        const int shift = 4 * (j % 2);
        for (int l = 0; l < 32; ++l)
            o->v[32 * j + l] = ((b->qs[32 * (j / 2) + l] >> shift) & 0xf) | (((b->qh[l] >> j) & 1) << 4);
    }
}

void decode_q6k(const BlockQ6K* b, Decoded* o) {
    o->dw = fp16_to_f32(b->d);
    o->dm = 0.0f;
    for (int k = 0; k < 16; ++k) o->sc[k] = b->scales[k];
    for (int e = 0; e < QK_K; ++e) {
        const int h = e / 128, w = e % 128;
        int lo = (b->ql[64 * h + w % 64] >> (4 * (w / 64))) & 0xf;
        int hi = (b->qh[32 * h + w % 32] >> (2 * (w / 32))) & 3;
        o->v[e] = (lo | (hi << 4)) - 32;
    }
}

inline int nib(const uint8_t* qs, int e) { return e < 16 ? (qs[e] & 0xf) : (qs[e - 16] >> 4); }
inline uint32_t qh32(const uint8_t* qh) { uint32_t v; std::memcpy(&v, qh, 4); return v; }

void decode_legacy(GGMLType wt, const uint8_t* blk, Decoded* o) {
    o->dm = 0.0f;
    switch (wt) {
        case GGMLType::Q4_0: {
            auto b = reinterpret_cast<const BlockQ4_0*>(blk);
            o->dw = fp16_to_f32(b->d);
            for (int e = 0; e < QK32; ++e) o->v[e] = nib(b->qs, e) - 8;
            break;
        }
        case GGMLType::Q4_1: {
            auto b = reinterpret_cast<const BlockQ4_1*>(blk);
            o->dw = fp16_to_f32(b->d);
            o->dm = fp16_to_f32(b->m);
            for (int e = 0; e < QK32; ++e) o->v[e] = nib(b->qs, e);
            break;
        }
        case GGMLType::Q5_0: {
            auto b = reinterpret_cast<const BlockQ5_0*>(blk);
            o->dw = fp16_to_f32(b->d);
            const uint32_t qh = qh32(b->qh);
            for (int e = 0; e < QK32; ++e) o->v[e] = (nib(b->qs, e) | (static_cast<int>((qh >> e) & 1) << 4)) - 16;
            break;
        }
        case GGMLType::Q5_1: {
            auto b = reinterpret_cast<const BlockQ5_1*>(blk);
            o->dw = fp16_to_f32(b->d);
            o->dm = fp16_to_f32(b->m);
            const uint32_t qh = qh32(b->qh);
            for (int e = 0; e < QK32; ++e) o->v[e] = nib(b->qs, e) | (static_cast<int>((qh >> e) & 1) << 4);
            break;
        }
        default: {  // Q8_0
            auto b = reinterpret_cast<const BlockQ8_0*>(blk);
            o->dw = fp16_to_f32(b->d);
            for (int e = 0; e < QK32; ++e) o->v[e] = b->qs[e];
            break;
        }
    }
}

// One row of a K-quant matrix against vectors t0..t0+nt.
void row_kquant(GGMLType wt, const uint8_t* row, int64_t K, const uint8_t* acts, const ActLayout& L, int t0, int nt,
                float* acc) {
    const int64_t bbytes = wt == GGMLType::Q4_K ? 144 : wt == GGMLType::Q5_K ? 176 : 210;
    Decoded dec;
    for (int64_t b = 0; b < K / QK_K; ++b) {
        const uint8_t* blk = row + b * bbytes;
        if (wt == GGMLType::Q4_K) decode_q4k(reinterpret_cast<const BlockQ4K*>(blk), &dec);
        else if (wt == GGMLType::Q5_K) decode_q5k(reinterpret_cast<const BlockQ5K*>(blk), &dec);
        else decode_q6k(reinterpret_cast<const BlockQ6K*>(blk), &dec);
        const int gsize = wt == GGMLType::Q6_K ? 16 : 32;
        for (int t = 0; t < nt; ++t) {
            const uint8_t* rec = acts + static_cast<int64_t>(t0 + t) * L.stride;
            const int8_t* qx = reinterpret_cast<const int8_t*>(rec) + b * QK_K;
            const int16_t* s16 = reinterpret_cast<const int16_t*>(rec + L.sums_off) + b * 16;
            const float dx = reinterpret_cast<const float*>(rec + L.d_off)[b];
            int32_t i1 = 0;
            for (int g = 0; g < QK_K / gsize; ++g) {
                int32_t s = 0;
                for (int i = 0; i < gsize; ++i) s += dec.v[g * gsize + i] * qx[g * gsize + i];
                i1 += dec.sc[g] * s;
            }
            acc[t] = std::fma(dec.dw * dx, static_cast<float>(i1), acc[t]);
            if (wt != GGMLType::Q6_K) {
                int32_t i2 = 0;
                for (int j = 0; j < 8; ++j) i2 += dec.mn[j] * (s16[2 * j] + s16[2 * j + 1]);
                acc[t] = std::fma(-(dec.dm * dx), static_cast<float>(i2), acc[t]);
            }
        }
    }
}

void row_legacy(GGMLType wt, const uint8_t* row, int64_t K, const uint8_t* acts, const ActLayout& L, int t0, int nt,
                float* acc) {
    const int64_t bbytes = ggml_bytes_per_block32(wt);
    const bool has_min = wt == GGMLType::Q4_1 || wt == GGMLType::Q5_1;
    float lanes[R_TILE][L_LANES] = {};
    Decoded dec;
    for (int64_t b = 0; b < K / QK32; ++b) {
        decode_legacy(wt, row + b * bbytes, &dec);
        for (int t = 0; t < nt; ++t) {
            const uint8_t* rec = acts + static_cast<int64_t>(t0 + t) * L.stride;
            const int8_t* qx = reinterpret_cast<const int8_t*>(rec) + b * QK32;
            const int16_t sum = reinterpret_cast<const int16_t*>(rec + L.sums_off)[b];
            const float dx = reinterpret_cast<const float*>(rec + L.d_off)[b];
            int32_t i1 = 0;
            for (int i = 0; i < QK32; ++i) i1 += dec.v[i] * qx[i];
            float& lane = lanes[t][b % L_LANES];
            lane = std::fma(dec.dw * dx, static_cast<float>(i1), lane);
            if (has_min) lane = std::fma(dec.dm * dx, static_cast<float>(sum), lane);
        }
    }
    for (int t = 0; t < nt; ++t) acc[t] = reduce_lanes(lanes[t]);
}

float load_float(GGMLType wt, const uint8_t* row, int64_t i) {
    uint16_t h;
    switch (wt) {
        case GGMLType::F32: { float f; std::memcpy(&f, row + 4 * i, 4); return f; }
        case GGMLType::F16: std::memcpy(&h, row + 2 * i, 2); return fp16_to_f32(h);
        default: std::memcpy(&h, row + 2 * i, 2); return bf16_to_f32(h);
    }
}

float row_float(GGMLType wt, const uint8_t* row, int64_t K, const float* x) {
    float lane[F_LANES] = {};
    for (int64_t i = 0; i < K; ++i) lane[i % F_LANES] = std::fma(load_float(wt, row, i), x[i], lane[i % F_LANES]);
    for (int w = F_LANES / 2; w >= 1; w /= 2)
        for (int l = 0; l < w; ++l) lane[l] = lane[l] + lane[l + w];
    return lane[0];
}

}  // namespace

int64_t ggml_bytes_per_block32(GGMLType wt) {
    switch (wt) {
        case GGMLType::Q4_0: return 18;
        case GGMLType::Q4_1: return 20;
        case GGMLType::Q5_0: return 22;
        case GGMLType::Q5_1: return 24;
        case GGMLType::Q8_0: return 34;
        default: return 0;
    }
}

int64_t quant_row_bytes(GGMLType wt, int64_t K) {
    switch (wt) {
        case GGMLType::F32: return 4 * K;
        case GGMLType::F16: case GGMLType::BF16: return 2 * K;
        case GGMLType::Q4_K: return K / QK_K * 144;
        case GGMLType::Q5_K: return K / QK_K * 176;
        case GGMLType::Q6_K: return K / QK_K * 210;
        default: return K / QK32 * ggml_bytes_per_block32(wt);
    }
}

void matmul_scalar_records(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* act_buf,
                           const float* x, int n_rec, float* y, int64_t ldy, int pair) {
    const int64_t rb = quant_row_bytes(wt, K);
    const ActKind kind = act_kind(wt);
    const ActLayout L = act_layout(wt, K);
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* row = W + r * rb;
        if (kind == ActKind::None) {
            for (int t = 0; t < n_rec; ++t) y[t * ldy + r] = row_float(wt, row, K, x + static_cast<int64_t>(t) * K);
            continue;
        }
        for (int t0 = 0; t0 < n_rec; t0 += R_TILE) {
            const int nt = n_rec - t0 < R_TILE ? n_rec - t0 : R_TILE;
            float acc[R_TILE] = {};
            if (kind == ActKind::Q8K) row_kquant(wt, row, K, act_buf, L, t0, nt, acc);
            else row_legacy(wt, row, K, act_buf, L, t0, nt, acc);
            store_out(y, ldy, r, t0, acc, nt, pair);
        }
    }
}

#if LG_SIMD_NONE
bool matmul_simd(GGMLType, const uint8_t*, int64_t, int64_t, int64_t, const uint8_t*, const float*, int, float*,
                 int64_t, int) {
    return false;
}
const char* simd_name() { return "scalar"; }
bool quantize_blocks_simd(const float*, int64_t, int, int8_t*, float*) { return false; }
#endif

}  // namespace lg

// Type support, scalar reference dequantizers (bit-exact with gguf.quants.dequantize),
// activation preparation and the matmul dispatch (SIMD kernel if compiled in, else scalar).
// Knows nothing about models or threads.
#include "quant.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "quant_blocks.h"
#include "quant_kernels.h"

// The reference dequantizers must round every product and sum separately, as numpy does:
// no fused multiply-add contraction in this file.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace lg {

bool quant_supported(GGMLType t) {
    switch (t) {
        case GGMLType::F32: case GGMLType::F16: case GGMLType::BF16:
        case GGMLType::Q4_0: case GGMLType::Q4_1: case GGMLType::Q5_0: case GGMLType::Q5_1:
        case GGMLType::Q8_0: case GGMLType::Q4_K: case GGMLType::Q5_K: case GGMLType::Q6_K:
            return true;
        default:
            return false;
    }
}

int64_t quant_block_elems(GGMLType t) {
    switch (act_kind(t)) {
        case ActKind::Q8K: return QK_K;
        case ActKind::Q8_32: return QK32;
        default: return 1;
    }
}

void quant_check(GGMLType t, int64_t K, const char* what) {
    if (!quant_supported(t))
        throw std::invalid_argument(std::string(what) + ": unsupported weight type " + ggml_type_name(t));
    int64_t be = quant_block_elems(t);
    if (K <= 0 || K % be != 0)
        throw std::invalid_argument(std::string(what) + ": " + ggml_type_name(t) + " needs a length that is a positive multiple of " +
                                    std::to_string(be) + ", got " + std::to_string(K));
}

// ---- dequantization ---------------------------------------------------------------------

namespace {

void deq_q4k(const BlockQ4K* b, float* y) {
    const float d = fp16_to_f32(b->d), dmin = fp16_to_f32(b->dmin);
    for (int j = 0; j < 8; ++j) {
        int sc, mn;
        q4k_scale_min(b->scales, j, &sc, &mn);
        const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(mn);
        const uint8_t* q = b->qs + 32 * (j / 2);
        const int shift = 4 * (j % 2);
        for (int l = 0; l < 32; ++l) y[32 * j + l] = dl * static_cast<float>((q[l] >> shift) & 0xf) - ml;
    }
}

void deq_q5k(const BlockQ5K* b, float* y) {
    const float d = fp16_to_f32(b->d), dmin = fp16_to_f32(b->dmin);
    for (int j = 0; j < 8; ++j) {
        int sc, mn;
        q4k_scale_min(b->scales, j, &sc, &mn);
        const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(mn);
        const uint8_t* q = b->qs + 32 * (j / 2);
        const int shift = 4 * (j % 2);
        for (int l = 0; l < 32; ++l) {
            int v = ((q[l] >> shift) & 0xf) | (((b->qh[l] >> j) & 1) << 4);
            y[32 * j + l] = dl * static_cast<float>(v) - ml;
        }
    }
}

void deq_q6k(const BlockQ6K* b, float* y) {
    const float d = fp16_to_f32(b->d);
    for (int e = 0; e < QK_K; ++e) {
        const int h = e / 128, w = e % 128;
        int lo = (b->ql[64 * h + w % 64] >> (4 * (w / 64))) & 0xf;
        int hi = (b->qh[32 * h + w % 32] >> (2 * (w / 32))) & 3;
        const float dl = d * static_cast<float>(b->scales[e / 16]);
        y[e] = dl * static_cast<float>((lo | (hi << 4)) - 32);
    }
}

inline int nib(const uint8_t* qs, int e) { return e < 16 ? (qs[e] & 0xf) : (qs[e - 16] >> 4); }
inline uint32_t qh32(const uint8_t* qh) { uint32_t v; std::memcpy(&v, qh, 4); return v; }

void deq_q4_0(const BlockQ4_0* b, float* y) {
    const float d = fp16_to_f32(b->d);
    for (int e = 0; e < QK32; ++e) y[e] = d * static_cast<float>(nib(b->qs, e) - 8);
}
void deq_q4_1(const BlockQ4_1* b, float* y) {
    const float d = fp16_to_f32(b->d), m = fp16_to_f32(b->m);
    for (int e = 0; e < QK32; ++e) y[e] = d * static_cast<float>(nib(b->qs, e)) + m;
}
void deq_q5_0(const BlockQ5_0* b, float* y) {
    const float d = fp16_to_f32(b->d);
    const uint32_t qh = qh32(b->qh);
    for (int e = 0; e < QK32; ++e) y[e] = d * static_cast<float>((nib(b->qs, e) | (static_cast<int>((qh >> e) & 1) << 4)) - 16);
}
void deq_q5_1(const BlockQ5_1* b, float* y) {
    const float d = fp16_to_f32(b->d), m = fp16_to_f32(b->m);
    const uint32_t qh = qh32(b->qh);
    for (int e = 0; e < QK32; ++e) y[e] = d * static_cast<float>(nib(b->qs, e) | (static_cast<int>((qh >> e) & 1) << 4)) + m;
}
void deq_q8_0(const BlockQ8_0* b, float* y) {
    const float d = fp16_to_f32(b->d);
    for (int e = 0; e < QK32; ++e) y[e] = static_cast<float>(b->qs[e]) * d;
}

template <typename Block, void (*F)(const Block*, float*), int BE>
void deq_blocks(const void* src, float* dst, int64_t n) {
    const Block* b = static_cast<const Block*>(src);
    for (int64_t i = 0; i < n / BE; ++i) F(b + i, dst + i * BE);
}

}  // namespace

void dequantize_row(GGMLType t, const void* src, float* dst, int64_t n) {
    quant_check(t, n, "dequantize_row");
    switch (t) {
        case GGMLType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
        case GGMLType::F16: {
            const uint16_t* h = static_cast<const uint16_t*>(src);
            for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_f32(h[i]);
            return;
        }
        case GGMLType::BF16: {
            const uint16_t* h = static_cast<const uint16_t*>(src);
            for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(h[i]);
            return;
        }
        case GGMLType::Q4_K: return deq_blocks<BlockQ4K, deq_q4k, QK_K>(src, dst, n);
        case GGMLType::Q5_K: return deq_blocks<BlockQ5K, deq_q5k, QK_K>(src, dst, n);
        case GGMLType::Q6_K: return deq_blocks<BlockQ6K, deq_q6k, QK_K>(src, dst, n);
        case GGMLType::Q4_0: return deq_blocks<BlockQ4_0, deq_q4_0, QK32>(src, dst, n);
        case GGMLType::Q4_1: return deq_blocks<BlockQ4_1, deq_q4_1, QK32>(src, dst, n);
        case GGMLType::Q5_0: return deq_blocks<BlockQ5_0, deq_q5_0, QK32>(src, dst, n);
        case GGMLType::Q5_1: return deq_blocks<BlockQ5_1, deq_q5_1, QK32>(src, dst, n);
        case GGMLType::Q8_0: return deq_blocks<BlockQ8_0, deq_q8_0, QK32>(src, dst, n);
        default: break;
    }
    throw std::invalid_argument(std::string("dequantize_row: unsupported type ") + ggml_type_name(t));
}

// ---- activations ------------------------------------------------------------------------

size_t act_buffer_bytes(GGMLType wt, int64_t K, int T) {
    quant_check(wt, K, "act_buffer_bytes");
    return static_cast<size_t>(act_layout(wt, K).stride) * static_cast<size_t>(T);
}

void prepare_acts(GGMLType wt, const float* x, int64_t K, int T, uint8_t* act_buf) {
    quant_check(wt, K, "prepare_acts");
    const ActLayout L = act_layout(wt, K);
    if (L.stride == 0) return;
    const bool kq = act_kind(wt) == ActKind::Q8K;
    for (int t = 0; t < T; ++t) {
        const float* xt = x + static_cast<int64_t>(t) * K;
        uint8_t* rec = act_buf + static_cast<int64_t>(t) * L.stride;
        int8_t* qs = reinterpret_cast<int8_t*>(rec);
        int16_t* sums = reinterpret_cast<int16_t*>(rec + L.sums_off);
        float* ds = reinterpret_cast<float*>(rec + L.d_off);
        const int64_t nb = K / L.ablk;
        const bool simd = quantize_blocks_simd(xt, nb, L.ablk, qs, ds);
        for (int64_t b = 0; b < nb; ++b) {
            const float* xb = xt + b * L.ablk;
            int8_t* qb = qs + b * L.ablk;
            if (!simd) {
                float amax = 0.0f;
                for (int i = 0; i < L.ablk; ++i) amax = std::fmax(amax, std::fabs(xb[i]));
                const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
                for (int i = 0; i < L.ablk; ++i) {
                    float v = std::nearbyint(xb[i] * id);
                    v = std::fmin(127.0f, std::fmax(-127.0f, v));  // guards rounding at the edge
                    qb[i] = static_cast<int8_t>(v);
                }
                ds[b] = amax / 127.0f;
            }
            const int group = kq ? 16 : QK32;
            for (int g = 0; g < L.ablk / group; ++g) {
                int s = 0;
                for (int i = 0; i < group; ++i) s += qb[g * group + i];
                sums[b * (L.ablk / group) + g] = static_cast<int16_t>(s);
            }
        }
    }
}

// ---- matmul dispatch --------------------------------------------------------------------

void matmul(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* act_buf,
            const float* x, int T, float* y, int64_t ldy) {
    quant_check(wt, K, "matmul");
    if (r1 <= r0 || T <= 0) return;
    if (matmul_simd(wt, W, K, r0, r1, act_buf, x, T, y, ldy)) return;
    matmul_scalar(wt, W, K, r0, r1, act_buf, x, T, y, ldy);
}

const char* quant_simd_name() { return simd_name(); }

}  // namespace lg

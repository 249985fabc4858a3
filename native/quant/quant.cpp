// Type support, scalar reference dequantizers (bit-exact with gguf.quants.dequantize),
// activation preparation and the matmul dispatch (SIMD kernel if compiled in, else scalar).
// Knows nothing about models or threads.
#include "quant/quant.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "quant/blocks.h"
#include "quant/kernels.h"

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

namespace {

// First ACT_HEADER_BYTES of a prepared buffer (quantized weight types only).
struct ActHeader {
    uint32_t magic, precision, kind;  // kind: ActKind, so Q4_K and Q6_K (or legacy types) can share
    int32_t T;
    int64_t K;
};
constexpr uint32_t ACT_MAGIC = 0x3141474cu;  // "LGA1"
constexpr int64_t ACT_HEADER_BYTES = ACT_ALIGN;
static_assert(sizeof(ActHeader) <= ACT_HEADER_BYTES, "act header");

void quantize_block(const float* xb, int ablk, int8_t* qb, float* d) {
    if (quantize_blocks_simd(xb, 1, ablk, qb, d)) return;
    float amax = 0.0f;
    for (int i = 0; i < ablk; ++i) amax = std::fmax(amax, std::fabs(xb[i]));
    const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
    for (int i = 0; i < ablk; ++i) {
        float v = std::nearbyint(xb[i] * id);
        v = std::fmin(127.0f, std::fmax(-127.0f, v));  // guards rounding at the edge
        qb[i] = static_cast<int8_t>(v);
    }
    *d = amax / 127.0f;
}

void fill_sums(const ActLayout& L, bool kq, int64_t K, uint8_t* rec) {
    const int8_t* qs = reinterpret_cast<const int8_t*>(rec);
    int16_t* sums = reinterpret_cast<int16_t*>(rec + L.sums_off);
    const int group = kq ? 16 : QK32;
    for (int64_t g = 0; g < K / group; ++g) {
        int s = 0;
        for (int i = 0; i < group; ++i) s += qs[g * group + i];
        sums[g] = static_cast<int16_t>(s);
    }
}

}  // namespace

int records_per_vector(ActPrecision prec) { return prec == ActPrecision::Q8X2 ? 2 : 1; }

ActPrecision parse_act_precision(const std::string& name) {
    if (name == "q8x2") return ActPrecision::Q8X2;
    if (name == "q8") return ActPrecision::Q8;
    throw std::invalid_argument("unknown activation precision '" + name + "' (q8x2, q8)");
}

const char* act_precision_name(ActPrecision p) { return p == ActPrecision::Q8 ? "q8" : "q8x2"; }

size_t act_buffer_bytes(GGMLType wt, int64_t K, int T, ActPrecision prec) {
    quant_check(wt, K, "act_buffer_bytes");
    const ActLayout L = act_layout(wt, K);
    if (L.stride == 0) return 0;
    return static_cast<size_t>(ACT_HEADER_BYTES + L.stride * records_per_vector(prec) * static_cast<int64_t>(T));
}

void prepare_acts(GGMLType wt, const float* x, int64_t K, int T, uint8_t* act_buf, ActPrecision prec) {
    prepare_acts_range(wt, x, K, T, 0, T, act_buf, prec);
}

void prepare_acts_range(GGMLType wt, const float* x, int64_t K, int T, int t0, int t1, uint8_t* act_buf,
                        ActPrecision prec) {
    quant_check(wt, K, "prepare_acts");
    const ActLayout L = act_layout(wt, K);
    if (L.stride == 0) return;
    if (prec != ActPrecision::Q8 && prec != ActPrecision::Q8X2) throw std::invalid_argument("prepare_acts: bad precision");
    if (t0 < 0 || t1 > T || t0 > t1) throw std::invalid_argument("prepare_acts: bad vector range");
    if (t0 == 0) {
        ActHeader h{ACT_MAGIC, static_cast<uint32_t>(prec), static_cast<uint32_t>(act_kind(wt)), T, K};
        std::memset(act_buf, 0, ACT_HEADER_BYTES);
        std::memcpy(act_buf, &h, sizeof(h));
    }
    const bool kq = act_kind(wt) == ActKind::Q8K;
    const int per = records_per_vector(prec);
    float resid[QK_K];
    for (int t = t0; t < t1; ++t) {
        const float* xt = x + static_cast<int64_t>(t) * K;
        uint8_t* hi = act_buf + ACT_HEADER_BYTES + static_cast<int64_t>(t) * per * L.stride;
        uint8_t* lo = hi + L.stride;
        float* dh = reinterpret_cast<float*>(hi + L.d_off);
        float* dl = reinterpret_cast<float*>(lo + L.d_off);
        for (int64_t b = 0; b < K / L.ablk; ++b) {
            const float* xb = xt + b * L.ablk;
            int8_t* qh = reinterpret_cast<int8_t*>(hi) + b * L.ablk;
            quantize_block(xb, L.ablk, qh, &dh[b]);
            if (per == 2) {  // the residual of the first term, itself quantized
                for (int i = 0; i < L.ablk; ++i) resid[i] = xb[i] - dh[b] * static_cast<float>(qh[i]);
                quantize_block(resid, L.ablk, reinterpret_cast<int8_t*>(lo) + b * L.ablk, &dl[b]);
            }
        }
        fill_sums(L, kq, K, hi);
        if (per == 2) fill_sums(L, kq, K, lo);
    }
}

// ---- matmul dispatch --------------------------------------------------------------------

namespace {

// Validates the buffer against the call; returns the first record, the record count and pairing.
const uint8_t* open_acts(GGMLType wt, int64_t K, int T, const uint8_t* act_buf, int* n_rec, int* pair) {
    *n_rec = T;
    *pair = 1;
    if (act_layout(wt, K).stride == 0) return act_buf;
    if (act_buf == nullptr) throw std::invalid_argument("matmul: no activation buffer (call prepare_acts)");
    ActHeader h;
    std::memcpy(&h, act_buf, sizeof(h));
    const char* kinds[] = {"none", "q8 per 256 (K-quant weights)", "q8 per 32 (legacy weights)"};
    if (h.magic != ACT_MAGIC || h.kind != static_cast<uint32_t>(act_kind(wt)) || h.K != K || h.T != T ||
        h.precision > static_cast<uint32_t>(ActPrecision::Q8X2))
        throw std::invalid_argument(std::string("matmul: activation buffer was prepared for another call (") +
                                    (h.magic == ACT_MAGIC && h.kind < 3 ? kinds[h.kind] : "not prepared") + ", K " +
                                    std::to_string(h.K) + ", T " + std::to_string(h.T) + "; called with " +
                                    ggml_type_name(wt) + ", K " + std::to_string(K) + ", T " + std::to_string(T) + ")");
    *pair = records_per_vector(static_cast<ActPrecision>(h.precision));
    *n_rec = T * *pair;
    return act_buf + ACT_HEADER_BYTES;
}

}  // namespace

void matmul(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* act_buf,
            const float* x, int T, float* y, int64_t ldy) {
    quant_check(wt, K, "matmul");
    if (r1 <= r0 || T <= 0) return;
    int n_rec, pair;
    const uint8_t* acts = open_acts(wt, K, T, act_buf, &n_rec, &pair);
    if (matmul_simd(wt, W, K, r0, r1, acts, x, n_rec, y, ldy, pair)) return;
    matmul_scalar_records(wt, W, K, r0, r1, acts, x, n_rec, y, ldy, pair);
}

void matmul_scalar(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* act_buf,
                   const float* x, int T, float* y, int64_t ldy) {
    quant_check(wt, K, "matmul_scalar");
    if (r1 <= r0 || T <= 0) return;
    int n_rec, pair;
    const uint8_t* acts = open_acts(wt, K, T, act_buf, &n_rec, &pair);
    matmul_scalar_records(wt, W, K, r0, r1, acts, x, n_rec, y, ldy, pair);
}

namespace {

// Rows [r0, r1) of packed group g through the GGUF kernels, on the group unpacked.
void matmul_unpacked_group(GGMLType wt, const uint8_t* W, int64_t K, int64_t g, int64_t r0, int64_t r1,
                           const uint8_t* acts, const float* x, int n_rec, float* y, int64_t ldy, int pair) {
    thread_local std::vector<uint8_t> tmp;  // one group; the engine's row splits never need it
    tmp.resize(static_cast<size_t>(PACK_ROWS * quant_row_bytes(wt, K)));
    unpack_weight_rows(wt, W, K, g, g + 1, tmp.data());
    const int64_t base = g * PACK_ROWS;
    float* yg = y + base;  // row r of the group lands at y[t * ldy + base + r]
    if (!matmul_simd(wt, tmp.data(), K, r0 - base, r1 - base, acts, x, n_rec, yg, ldy, pair))
        matmul_scalar_records(wt, tmp.data(), K, r0 - base, r1 - base, acts, x, n_rec, yg, ldy, pair);
}

}  // namespace

void matmul_packed(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* act_buf,
                   const float* x, int T, float* y, int64_t ldy) {
    quant_check(wt, K, "matmul_packed");
    if (!pack_type(wt)) throw std::invalid_argument(std::string("matmul_packed: no packed layout for ") + ggml_type_name(wt));
    if (r1 <= r0 || T <= 0) return;
    int n_rec, pair;
    const uint8_t* acts = open_acts(wt, K, T, act_buf, &n_rec, &pair);
    const int64_t a = (r0 + PACK_ROWS - 1) / PACK_ROWS * PACK_ROWS, e = r1 / PACK_ROWS * PACK_ROWS;
    if (a >= e) {  // inside one group, or across one group boundary
        for (int64_t g = r0 / PACK_ROWS; g * PACK_ROWS < r1; ++g)
            matmul_unpacked_group(wt, W, K, g, std::max(r0, g * PACK_ROWS), std::min(r1, (g + 1) * PACK_ROWS), acts,
                                  x, n_rec, y, ldy, pair);
        return;
    }
    if (r0 < a) matmul_unpacked_group(wt, W, K, r0 / PACK_ROWS, r0, a, acts, x, n_rec, y, ldy, pair);
#if LG_SIMD_NEON
    const bool done = matmul_packed_simd(wt, W, K, a, e, acts, n_rec, y, ldy, pair);
#else
    const bool done = false;
#endif
    if (!done)
        for (int64_t g = a / PACK_ROWS; g < e / PACK_ROWS; ++g)
            matmul_unpacked_group(wt, W, K, g, g * PACK_ROWS, (g + 1) * PACK_ROWS, acts, x, n_rec, y, ldy, pair);
    if (e < r1) matmul_unpacked_group(wt, W, K, e / PACK_ROWS, e, r1, acts, x, n_rec, y, ldy, pair);
}

const char* quant_simd_name() { return simd_name(); }

}  // namespace lg

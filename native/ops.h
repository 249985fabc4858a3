// Elementwise building blocks of the forward pass, shared with the quantized kernels: the one exact
// fp16/bf16 <-> float conversion family, the one fixed-order lane reduction, and the small math
// (dot, exp, RoPE, RMSNorm, SiLU, softmax). Hot small ones are inline here; loops live in ops.cpp.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace lg {

// Exact IEEE half -> float (subnormals, inf and NaN included).
inline float fp16_to_f32(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
    if (exp == 0) {
        float f = static_cast<float>(man) * 0x1p-24f;  // exact: man < 2^10
        std::memcpy(&bits, &f, 4);
        bits |= sign;
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 112u) << 23) | (man << 13);
    }
    float out;
    std::memcpy(&out, &bits, 4);
    return out;
}

// float -> IEEE half, round to nearest even (overflow to inf; NaN stays a quiet NaN).
inline uint16_t fp32_to_f16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0));
    if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
    if (ax < 0x38800000u) {  // subnormal half (or zero)
        float a;
        std::memcpy(&a, &ax, 4);
        uint32_t m = static_cast<uint32_t>(std::nearbyint(a * 16777216.0f));  // a / 2^-24
        return static_cast<uint16_t>(sign | m);
    }
    uint32_t mant = ax & 0x7fffffu, exp = (ax >> 23) - 112;
    uint32_t h = (exp << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
    return static_cast<uint16_t>(sign | h);
}

inline float bf16_to_f32(uint16_t h) {
    uint32_t bits = static_cast<uint32_t>(h) << 16;
    float out;
    std::memcpy(&out, &bits, 4);
    return out;
}

// Arrays of n values (the KV cache's fp16 values): F16C when compiled in, else the scalar pair
// above; the same bits either way (inline: the attention converts one value row per position).
#if defined(__F16C__)
inline void f32_to_f16(const float* src, uint16_t* dst, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) dst[i] = _cvtss_sh(src[i], _MM_FROUND_TO_NEAREST_INT);
}
inline void f16_to_f32(const uint16_t* src, float* dst, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
    for (; i < n; i++) dst[i] = _cvtsh_ss(src[i]);
}
#else
inline void f32_to_f16(const float* src, uint16_t* dst, int n) { for (int i = 0; i < n; i++) dst[i] = fp32_to_f16(src[i]); }
inline void f16_to_f32(const uint16_t* src, float* dst, int n) { for (int i = 0; i < n; i++) dst[i] = fp16_to_f32(src[i]); }
#endif

// Pairwise tree sum of N accumulators: (i, i+N/2), then (i, i+N/4), ... Every reduction of
// lanes in native/ uses this order; it is part of the bit-identity contract.
template <int N>
inline float reduce_lanes(float* l) {
    for (int w = N / 2; w >= 1; w /= 2)
        for (int i = 0; i < w; ++i) l[i] = l[i] + l[i + w];
    return l[0];
}

// Lanes of the forward's float loops: 16 independent accumulators then reduce_lanes, so loops
// vectorize without -ffast-math and the order depends only on n.
constexpr int LANES = 16;

inline float dot(const float* a, const float* b, int n) {
    float acc[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) acc[j] += a[i + j] * b[i + j];
    for (; i < n; i++) acc[i % LANES] += a[i] * b[i];
    return reduce_lanes<LANES>(acc);
}

// exp for x <= 88: 2^n * p(r), |r| <= ln2/2, degree-6 polynomial (rel. error ~2e-7). Branchless
// so loops over it vectorize; one definition so every caller rounds the same way.
inline float exp_approx(float x) {
    x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
    float n = std::floor(x * 1.44269504088896341f + 0.5f);
    float r = x - n * 0.693145751953125f - n * 1.42860682030941723212e-6f;
    float p = 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
    float scale;
    std::memcpy(&scale, &bits, 4);
    return p * scale;
}

// Rotate one head vector of hd values by the angles whose cos/sin are c, s (hd/2 each); in == out
// allowed. neox: pairs (x[i], x[i + hd/2]) (qwen2); else (x[2i], x[2i+1]) (llama in GGUF).
inline void rope(float* out, const float* in, const float* c, const float* s, int hd, bool neox) {
    const int half = hd / 2;
    if (neox) {
        for (int i = 0; i < half; i++) {
            float a = in[i], b = in[i + half];
            out[i] = a * c[i] - b * s[i];
            out[i + half] = a * s[i] + b * c[i];
        }
    } else {
        for (int i = 0; i < half; i++) {
            float a = in[2 * i], b = in[2 * i + 1];
            out[2 * i] = a * c[i] - b * s[i];
            out[2 * i + 1] = a * s[i] + b * c[i];
        }
    }
}

// RoPE frequencies theta_i = base^(-2i/hd), i < hd/2, in double (the CPU and CUDA engines both).
void rope_frequencies(double base, int hd, double* theta);
// cos/sin of rotation index `rot` for every frequency: angles in double (exact for any stream age
// that fits in 2^53 tokens), rounded to float once.
void fill_rope_row(const double* theta, int hd, int64_t rot, float* c, float* s);

// out = x / sqrt(mean(x^2) + eps) * w over n values.
void rmsnorm(float* out, const float* x, const float* w, int n, float eps);
// g = silu(g) * u over n values.
void silu_mul(float* __restrict g, const float* __restrict u, int64_t n);
// s = exp(s - max(s)) over n > 0 values, in place; returns 1 / sum(s) (callers scale as they read).
float softmax_exp(float* s, int n);

}  // namespace lg

// Scalar building blocks shared by the forward pass and the quantized kernels: the one exact
// fp16/bf16 -> float conversion and the one fixed-order lane reduction.
#pragma once
#include <cstdint>
#include <cstring>

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

inline float bf16_to_f32(uint16_t h) {
    uint32_t bits = static_cast<uint32_t>(h) << 16;
    float out;
    std::memcpy(&out, &bits, 4);
    return out;
}

// Pairwise tree sum of N accumulators: (i, i+N/2), then (i, i+N/4), ... Every reduction of
// lanes in native/ uses this order; it is part of the bit-identity contract.
template <int N>
inline float reduce_lanes(float* l) {
    for (int w = N / 2; w >= 1; w /= 2)
        for (int i = 0; i < w; ++i) l[i] = l[i] + l[i + w];
    return l[0];
}

}  // namespace lg

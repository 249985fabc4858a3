// Device-side decoding of ggml weight blocks (layouts in native/quant_blocks.h): one element
// (embedding rows) and one 32-element unit as packed int8x4 words for dp4a. Knows nothing
// about kernels' thread layout.
#pragma once
#include "common.cuh"

namespace lg {
namespace cuda {

// ggml type ids (values of lg::GGMLType) usable as template arguments.
enum WType : int { W_F32 = 0, W_F16 = 1, W_Q4_0 = 2, W_Q4_1 = 3, W_Q5_0 = 6, W_Q8_0 = 8,
                   W_Q4_K = 12, W_Q6_K = 14 };

__device__ __forceinline__ float ld_half(const uint8_t* p) {
    return __half2float(__ushort_as_half(*reinterpret_cast<const unsigned short*>(p)));
}
// 32-bit little-endian load from a 2-byte aligned address (Q5_0, Q8_0, Q6_K blocks).
__device__ __forceinline__ uint32_t ld_u32_a2(const uint8_t* p) {
    const unsigned short* h = reinterpret_cast<const unsigned short*>(p);
    return static_cast<uint32_t>(h[0]) | (static_cast<uint32_t>(h[1]) << 16);
}
__device__ __forceinline__ uint32_t ld_u32(const uint8_t* p) { return *reinterpret_cast<const uint32_t*>(p); }

// N little-endian 32-bit words from a 2-byte aligned address: N + 1 aligned loads joined by funnel
// shifts (half the loads of 16-bit pairs). Reads up to 4 bytes past the N words: the engine's
// weight buffer ends with slack for it.
template <int N>
__device__ __forceinline__ void ld_words_a2(const uint8_t* p, int (&w)[N]) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    const uint32_t* base = reinterpret_cast<const uint32_t*>(a & ~static_cast<uintptr_t>(3));
    const uint32_t sh = static_cast<uint32_t>(a & 3) * 8;
    uint32_t x[N + 1];
#pragma unroll
    for (int i = 0; i <= N; i++) x[i] = base[i];
#pragma unroll
    for (int i = 0; i < N; i++) w[i] = static_cast<int>(__funnelshift_r(x[i], x[i + 1], sh));
}

// Bits 0..3 of x to bit 4 of bytes 0..3 (Q5_0 fifth bits).
__device__ __forceinline__ uint32_t spread4(uint32_t x) {
    return ((x & 1u) << 4) | ((x & 2u) << 11) | ((x & 4u) << 18) | ((x & 8u) << 25);
}

// A packed word of 4 weights (elements 4k..4k+3 of a unit, lowest byte first) from its stored bits, per
// type; load_unit and unit_words2 load differently but assemble words only here.
__device__ __forceinline__ int q6k_word(uint32_t ql, uint32_t qh, int sl, int sh) {  // q - 32, in [-32, 31]
    return static_cast<int>(__vsub4(((ql >> sl) & 0x0F0F0F0Fu) | (((qh >> sh) & 0x03030303u) << 4), 0x20202020u));
}
// Q4_1: low nibbles are elements 4k.., high nibbles 16 + 4k..
__device__ __forceinline__ void q4_1_words(uint32_t q, int& lo, int& hi) {
    lo = static_cast<int>(q & 0x0F0F0F0Fu);
    hi = static_cast<int>((q >> 4) & 0x0F0F0F0Fu);
}
__device__ __forceinline__ void q4_0_words(uint32_t q, int& lo, int& hi) {  // q - 8
    lo = static_cast<int>(__vsub4(q & 0x0F0F0F0Fu, 0x08080808u));
    hi = static_cast<int>(__vsub4((q >> 4) & 0x0F0F0F0Fu, 0x08080808u));
}
__device__ __forceinline__ void q5_0_words(uint32_t q, uint32_t qh, int k, int& lo, int& hi) {  // q - 16
    lo = static_cast<int>(__vsub4((q & 0x0F0F0F0Fu) | spread4(qh >> (4 * k)), 0x10101010u));
    hi = static_cast<int>(__vsub4(((q >> 4) & 0x0F0F0F0Fu) | spread4(qh >> (16 + 4 * k)), 0x10101010u));
}

// 6-bit scale and min of Q4_K sub-block j (as q4k_scale_min in quant_blocks.h).
__device__ __forceinline__ void q4k_sm(const uint8_t* s, int j, int* sc, int* mn) {
    if (j < 4) {
        *sc = s[j] & 63;
        *mn = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4);
        *mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

__host__ __device__ constexpr int block_elems(int t) {
    return (t == W_Q4_K || t == W_Q6_K) ? 256 : (t <= W_F16 ? 1 : 32);
}
__host__ __device__ constexpr int block_bytes(int t) {
    return t == W_F32 ? 4 : t == W_F16 ? 2 : t == W_Q4_0 ? 18 : t == W_Q4_1 ? 20 : t == W_Q5_0 ? 22
         : t == W_Q8_0 ? 34 : t == W_Q4_K ? 144 : t == W_Q6_K ? 210 : 0;
}

// Element e of a row, exactly as native/quant.cpp dequantize_row computes it.
template <int TYPE>
__device__ __forceinline__ float dequant_elem(const uint8_t* row, int e) {
    if constexpr (TYPE == W_F32) {
        return reinterpret_cast<const float*>(row)[e];
    } else if constexpr (TYPE == W_F16) {
        return ld_half(row + 2 * e);
    } else if constexpr (TYPE == W_Q4_K) {
        const uint8_t* b = row + (e / 256) * 144;
        const int r = e % 256, j = r / 32;
        int sc, mn;
        q4k_sm(b + 4, j, &sc, &mn);
        const float dl = ld_half(b) * static_cast<float>(sc), ml = ld_half(b + 2) * static_cast<float>(mn);
        const int q = (b[16 + 32 * (j / 2) + r % 32] >> (4 * (j % 2))) & 0xf;
        return dl * static_cast<float>(q) - ml;
    } else if constexpr (TYPE == W_Q6_K) {
        const uint8_t* b = row + (e / 256) * 210;
        const int r = e % 256, h = r / 128, w = r % 128;
        const int lo = (b[64 * h + w % 64] >> (4 * (w / 64))) & 0xf;
        const int hi = (b[128 + 32 * h + w % 32] >> (2 * (w / 32))) & 3;
        const float dl = ld_half(b + 208) * static_cast<float>(static_cast<int8_t>(b[192 + r / 16]));
        return dl * static_cast<float>((lo | (hi << 4)) - 32);
    } else {
        const int i = e % 32;
        const int nibble_byte = i < 16 ? i : i - 16, nibble_shift = i < 16 ? 0 : 4;
        if constexpr (TYPE == W_Q4_0) {
            const uint8_t* b = row + (e / 32) * 18;
            return ld_half(b) * static_cast<float>(((b[2 + nibble_byte] >> nibble_shift) & 0xf) - 8);
        } else if constexpr (TYPE == W_Q4_1) {
            const uint8_t* b = row + (e / 32) * 20;
            return ld_half(b) * static_cast<float>((b[4 + nibble_byte] >> nibble_shift) & 0xf) + ld_half(b + 2);
        } else if constexpr (TYPE == W_Q5_0) {
            const uint8_t* b = row + (e / 32) * 22;
            const uint32_t qh = ld_u32_a2(b + 2);
            const int q = ((b[6 + nibble_byte] >> nibble_shift) & 0xf) | (static_cast<int>((qh >> i) & 1) << 4);
            return ld_half(b) * static_cast<float>(q - 16);
        } else {  // Q8_0
            const uint8_t* b = row + (e / 32) * 34;
            return static_cast<float>(static_cast<int8_t>(b[2 + i])) * ld_half(b);
        }
    }
}

// Scales of one 32-element unit, so that  contribution = fmaf(f1 * dx, (float)i1, acc)
// [+ fmaf(f2 * dx, (float)i2, acc)]  with i1 = sc0 * dot(elements 0..15) + sc1 * dot(16..31) and
// i2 = mn * sum(qx).
struct UnitScale {
    float f1;     // d (block scale)
    float f2;     // Q4_K: -dmin; Q4_1: m; else 0
    int sc0, sc1; // integer scales of elements 0..15 and 16..31 (1 for legacy types)
    int mn;       // Q4_K min of the sub-block; Q4_1: 1; else 0
};

template <int TYPE>
__device__ __forceinline__ UnitScale unit_scale(const uint8_t* row, int u) {
    UnitScale S;
    if constexpr (TYPE == W_Q4_K) {
        const uint8_t* b = row + (u >> 3) * 144;
        int sc, mn;
        q4k_sm(b + 4, u & 7, &sc, &mn);
        S.f1 = ld_half(b);
        S.f2 = -ld_half(b + 2);
        S.sc0 = S.sc1 = sc;
        S.mn = mn;
    } else if constexpr (TYPE == W_Q6_K) {
        const uint8_t* b = row + (u >> 3) * 210;
        const int g8 = u & 7, h = g8 >> 2, g = g8 & 3;
        S.f1 = ld_half(b + 208);
        S.f2 = 0.0f;
        S.sc0 = static_cast<int8_t>(b[192 + 8 * h + 2 * g]);
        S.sc1 = static_cast<int8_t>(b[192 + 8 * h + 2 * g + 1]);
        S.mn = 0;
    } else {
        const uint8_t* b = row + u * block_bytes(TYPE);
        S.f1 = ld_half(b);
        S.f2 = TYPE == W_Q4_1 ? ld_half(b + 2) : 0.0f;
        S.sc0 = S.sc1 = 1;
        S.mn = TYPE == W_Q4_1 ? 1 : 0;
    }
    return S;
}

// One 32-element unit u of a row: w[8] packed int8x4 (element 4k+j in byte j of w[k]) and its
// scales (UnitScale).
struct UnitW {
    int w[8];
    UnitScale s;
};

template <int TYPE>
__device__ __forceinline__ void load_unit(const uint8_t* row, int u, UnitW& W) {
    W.s = unit_scale<TYPE>(row, u);
    if constexpr (TYPE == W_Q4_K) {
        const uint8_t* b = row + (u >> 3) * 144;
        const int j = u & 7, shift = 4 * (j & 1);
        const uint4* qs = reinterpret_cast<const uint4*>(b + 16 + 32 * (j >> 1));  // 16-byte aligned (144 = 9 x 16)
        const uint4 lo = qs[0], hi = qs[1];
        const uint32_t raw[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
        for (int k = 0; k < 8; k++) W.w[k] = static_cast<int>((raw[k] >> shift) & 0x0F0F0F0Fu);
    } else if constexpr (TYPE == W_Q6_K) {
        const uint8_t* b = row + (u >> 3) * 210;
        const int g8 = u & 7, h = g8 >> 2, g = g8 & 3;
        const int sl = 4 * (g >> 1), sh = 2 * g;
        int ql[8], qh[8];
        ld_words_a2<8>(b + 64 * h + 32 * (g & 1), ql);
        ld_words_a2<8>(b + 128 + 32 * h, qh);
#pragma unroll
        for (int k = 0; k < 8; k++)
            W.w[k] = q6k_word(static_cast<uint32_t>(ql[k]), static_cast<uint32_t>(qh[k]), sl, sh);
    } else if constexpr (TYPE == W_Q4_1) {
        const uint8_t* b = row + u * 20;
#pragma unroll
        for (int k = 0; k < 4; k++) q4_1_words(ld_u32(b + 4 + 4 * k), W.w[k], W.w[k + 4]);
    } else if constexpr (TYPE == W_Q4_0) {
        const uint8_t* b = row + u * 18;
        int qs[4];
        ld_words_a2<4>(b + 2, qs);
#pragma unroll
        for (int k = 0; k < 4; k++) q4_0_words(static_cast<uint32_t>(qs[k]), W.w[k], W.w[k + 4]);
    } else if constexpr (TYPE == W_Q5_0) {
        const uint8_t* b = row + u * 22;
        const uint32_t qh = ld_u32_a2(b + 2);
        int qs[4];
        ld_words_a2<4>(b + 6, qs);
#pragma unroll
        for (int k = 0; k < 4; k++) q5_0_words(static_cast<uint32_t>(qs[k]), qh, k, W.w[k], W.w[k + 4]);
    } else {  // Q8_0
        const uint8_t* b = row + u * 34;
        ld_words_a2<8>(b + 2, W.w);
    }
}

// Words k and k + 4 of unit u (elements 4k..4k+3 and 16+4k..16+4k+3, as load_unit packs them): what
// lane group k of an int8 mma fragment holds of one weight row.
template <int TYPE>
__device__ __forceinline__ void unit_words2(const uint8_t* row, int u, int k, int& lo, int& hi) {
    if constexpr (TYPE == W_Q4_K) {
        const uint8_t* qs = row + (u >> 3) * 144 + 16 + 32 * ((u & 7) >> 1);
        const int shift = 4 * (u & 1);
        lo = static_cast<int>((ld_u32(qs + 4 * k) >> shift) & 0x0F0F0F0Fu);
        hi = static_cast<int>((ld_u32(qs + 16 + 4 * k) >> shift) & 0x0F0F0F0Fu);
    } else if constexpr (TYPE == W_Q6_K) {
        const uint8_t* b = row + (u >> 3) * 210;
        const int g8 = u & 7, h = g8 >> 2, g = g8 & 3;
        const int sl = 4 * (g >> 1), sh = 2 * g;
        const uint8_t* ql = b + 64 * h + 32 * (g & 1);
        const uint8_t* qh = b + 128 + 32 * h;
        lo = q6k_word(ld_u32_a2(ql + 4 * k), ld_u32_a2(qh + 4 * k), sl, sh);
        hi = q6k_word(ld_u32_a2(ql + 16 + 4 * k), ld_u32_a2(qh + 16 + 4 * k), sl, sh);
    } else if constexpr (TYPE == W_Q4_1) {
        q4_1_words(ld_u32(row + u * 20 + 4 + 4 * k), lo, hi);
    } else if constexpr (TYPE == W_Q4_0) {
        q4_0_words(ld_u32_a2(row + u * 18 + 2 + 4 * k), lo, hi);
    } else if constexpr (TYPE == W_Q5_0) {
        const uint8_t* b = row + u * 22;
        q5_0_words(ld_u32_a2(b + 6 + 4 * k), ld_u32_a2(b + 2), k, lo, hi);
    } else {  // Q8_0
        const uint8_t* b = row + u * 34 + 2;
        lo = static_cast<int>(ld_u32_a2(b + 4 * k));
        hi = static_cast<int>(ld_u32_a2(b + 16 + 4 * k));
    }
}

}  // namespace cuda
}  // namespace lg

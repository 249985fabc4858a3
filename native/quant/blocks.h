// On-disk ggml block layouts (packed structs, sizes asserted) and the
// layout of prepared activations shared by the scalar and SIMD kernels (scalar.cpp, x86/, arm/).
// Knows nothing about models, threads or Python.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "gguf.h"
#include "ops.h"

namespace lg {

constexpr int QK_K = 256;  // elements per K-quant super-block
constexpr int QK32 = 32;   // elements per legacy block (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0)

#pragma pack(push, 1)
// Q4_K: 8 sub-blocks of 32; element e lives in qs[32*(e/64) + e%32], low nibble when
// (e%64) < 32 else high nibble. 6-bit scales/mins packed in `scales` (see q4k_scale_min).
struct BlockQ4K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[QK_K / 2]; };
// Q5_K: Q4_K plus the fifth bit of element e in bit (e/32) of qh[e%32].
struct BlockQ5K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; };
// Q6_K: value = q - 32 (q in 0..63), 16 sub-blocks of 16 with int8 scales. For e, h = e/128,
// w = e%128: low 4 bits in ql[64h + w%64] (nibble w/64), high 2 bits in qh[32h + w%32] at
// bit 2*(w/32).
struct BlockQ6K { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; uint16_t d; };
// Legacy 32-blocks: element e < 16 is the low nibble of qs[e], e >= 16 the high nibble of qs[e-16].
struct BlockQ4_0 { uint16_t d; uint8_t qs[QK32 / 2]; };
struct BlockQ4_1 { uint16_t d, m; uint8_t qs[QK32 / 2]; };
struct BlockQ5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[QK32 / 2]; };  // qh: u32 LE, bit e
struct BlockQ5_1 { uint16_t d, m; uint8_t qh[4]; uint8_t qs[QK32 / 2]; };
struct BlockQ8_0 { uint16_t d; int8_t qs[QK32]; };
#pragma pack(pop)

static_assert(sizeof(BlockQ4K) == 144, "Q4_K block");
static_assert(sizeof(BlockQ5K) == 176, "Q5_K block");
static_assert(sizeof(BlockQ6K) == 210, "Q6_K block");
static_assert(sizeof(BlockQ4_0) == 18, "Q4_0 block");
static_assert(sizeof(BlockQ4_1) == 20, "Q4_1 block");
static_assert(sizeof(BlockQ5_0) == 22, "Q5_0 block");
static_assert(sizeof(BlockQ5_1) == 24, "Q5_1 block");
static_assert(sizeof(BlockQ8_0) == 34, "Q8_0 block");

// The header of a legacy 32-block (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) at blk: d, m (Q4_1 and Q5_1; else 0), the
// high bits qh (Q5_0 and Q5_1; else 0), and the offset of qs (Q8_0: of its 32 signed values).
struct LegacyHeader {
    uint16_t d, m;
    uint32_t qh;
    int qs_off;
};

inline LegacyHeader legacy_header(GGMLType wt, const uint8_t* blk) {
    LegacyHeader h{0, 0, 0, 2};
    std::memcpy(&h.d, blk, 2);
    if (wt == GGMLType::Q4_1 || wt == GGMLType::Q5_1) {
        std::memcpy(&h.m, blk + 2, 2);
        h.qs_off = 4;
    }
    if (wt == GGMLType::Q5_0 || wt == GGMLType::Q5_1) {
        std::memcpy(&h.qh, blk + h.qs_off, 4);
        h.qs_off += 4;
    }
    return h;
}

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K block.
inline void q4k_scale_min(const uint8_t* s, int j, int* sc, int* mn) {
    if (j < 4) {
        *sc = s[j] & 63;
        *mn = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4);
        *mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

// ---- prepared activations ---------------------------------------------------------------
// Each activation vector x[t] (K floats) is quantized to int8 in blocks of `ablk` elements
// (256 for K-quant weights, 32 for legacy weights) with a float scale per block:
//   qx[i] = round(x[i] / d), d = max|x| / 127 over the block, so |qx| <= 127.
// Per vector t, at act_buf + t * act_stride(wt, K):
//   int8  qs[K]            quantized values
//   int16 sums[K / 16]     (K-quants) sums of qs over each 16 elements
//         sums[K / 32]     (legacy)   sums of qs over each 32-block
//   float d[K / ablk]      block scales
// F16/F32/BF16 weights use the float x directly (no buffer).
enum class ActKind { None, Q8K, Q8_32 };

inline ActKind act_kind(GGMLType wt) {
    switch (wt) {
        case GGMLType::Q4_K: case GGMLType::Q5_K: case GGMLType::Q6_K: return ActKind::Q8K;
        case GGMLType::Q4_0: case GGMLType::Q4_1: case GGMLType::Q5_0: case GGMLType::Q5_1:
        case GGMLType::Q8_0: return ActKind::Q8_32;
        default: return ActKind::None;
    }
}

inline bool is_kquant(GGMLType wt) { return act_kind(wt) == ActKind::Q8K; }     // Q4_K, Q5_K, Q6_K
inline bool is_legacy(GGMLType wt) { return act_kind(wt) == ActKind::Q8_32; }  // 32-blocks

struct ActLayout {
    int64_t sums_off, d_off, stride;  // byte offsets inside one vector's record, and its size
    int ablk;                         // elements per activation block
};

constexpr int64_t ACT_ALIGN = 64;

inline ActLayout act_layout(GGMLType wt, int64_t K) {
    ActLayout L{0, 0, 0, 0};
    ActKind k = act_kind(wt);
    if (k == ActKind::None) return L;
    L.ablk = k == ActKind::Q8K ? QK_K : QK32;
    int64_t n_sums = k == ActKind::Q8K ? K / 16 : K / QK32;
    L.sums_off = (K + 15) / 16 * 16;
    L.d_off = L.sums_off + (n_sums * 2 + 15) / 16 * 16;
    int64_t end = L.d_off + (K / L.ablk) * 4;
    L.stride = (end + ACT_ALIGN - 1) / ACT_ALIGN * ACT_ALIGN;
    return L;
}

// ---- canonical accumulation order (every kernel, scalar or SIMD, follows it exactly) -------
// Per (row r, vector t), with exact int32 block sums i1 (and i2 for types with a min):
// K-quants: acc = 0.0f, then for each weight block b in order
//   acc = fmaf(dw_b * dx_b, (float)i1, acc)
//   acc = fmaf(-(dm_b * dx_b), (float)i2, acc)         ; Q4_K/Q5_K only (dm = dmin)
// Legacy 32-blocks: L_LANES accumulators, block b goes to lane b % L_LANES, in order:
//   lane = fmaf(dw_b * dx_b, (float)i1, lane)
//   lane = fmaf(mw_b * dx_b, (float)i2, lane)          ; Q4_1/Q5_1 only (i2 = sum of qx)
// then lanes fold pairwise: (l, l+4), then (l, l+2), then (l, l+1).
// Float weights: F_LANES lanes, lane l accumulates elements i = l (mod 16) with fmaf in order,
// then the lanes fold pairwise: (l, l+8), then (l, l+4), (l, l+2), (l, l+1).
constexpr int L_LANES = 8;

// Pairwise tree sum of one row's L_LANES accumulators (ops.h), in the one fixed order every
// path (scalar, AVX2, AVX-512, NEON) uses: this order is part of the bit-identity contract.
inline float reduce_lanes(float* l) { return reduce_lanes<L_LANES>(l); }

// Kernel output of tile vectors t0..t0+nt: with pair == 2 (ActPrecision::Q8X2) vectors 2u and
// 2u+1 are the two int8 terms of input u, and y[u] = out(2u) + out(2u+1).
inline void store_out(float* y, int64_t ldy, int64_t r, int t0, const float* out, int nt, int pair) {
    for (int t = 0; t < nt; t += pair) y[static_cast<int64_t>((t0 + t) / pair) * ldy + r] = pair == 2 ? out[t] + out[t + 1] : out[t];
}
constexpr int F_LANES = 16;

}  // namespace lg

// Internal to the aarch64 NEON kernels (neon.cpp: the reducing K-quant kernel; neon_rowlane.cpp: the K-quant
// row-lane kernel; neon_legacy.cpp: legacy 32-blocks; neon_packed.cpp: packed weights): the helpers they share and the entries of one variant.
// neon_dotprod.cpp compiles them all again in namespace neon_dotprod with sdot; arm/dispatch.cpp picks the variant from HWCAP at run time.
#pragma once
#include "quant/arm/plan.h"
#include "quant/blocks.h"
#include "quant/kernels.h"

#if LG_SIMD_NEON
#include <arm_neon.h>

#include <type_traits>

#ifndef LG_NEON_NS  // the plain Armv8-A variant unless neon_dotprod.cpp says otherwise
#define LG_NEON_NS neon
#define LG_NEON_DOTPROD 0
#endif
#ifndef LG_NEON_I8MM  // smmla packed kernels: neon_i8mm.cpp only
#define LG_NEON_I8MM 0
#endif

namespace lg::quant::LG_NEON_NS {


constexpr int R_TILE = 8;  // activation vectors sharing one decode of a weight block

// 4 int32 lanes whose total is the dot product of 16 int8 pairs.
inline int32x4_t dot16(int32x4_t acc, int8x16_t a, int8x16_t b) {
#if LG_NEON_DOTPROD
    return vdotq_s32(acc, a, b);
#else
    int16x8_t p = vmull_s8(vget_low_s8(a), vget_low_s8(b));
    p = vmlal_s8(p, vget_high_s8(a), vget_high_s8(b));  // |p| <= 2 * 128 * 127 < 2^15: |b| <= 127
    return vpadalq_s16(acc, p);
#endif
}

inline float h2f(uint16_t h) { return fp16_to_f32(h); }

// The weight type of a K-quant block struct, at compile time (act_layout then folds to constants).
template <typename Block>
constexpr GGMLType kquant_type() {
    return std::is_same<Block, BlockQ6K>::value   ? GGMLType::Q6_K
           : std::is_same<Block, BlockQ5K>::value ? GGMLType::Q5_K
                                                  : GGMLType::Q4_K;
}

// The fp16 field at p of four rows `stride` bytes apart, as floats. FCVTL converts every non-NaN half exactly,
// as fp16_to_f32 does (FPCR.FZ16 is off, the Linux default); a NaN scale gives a NaN output either way.
inline float32x4_t h2f_rows(const uint8_t* p, int64_t stride) {
    uint16x4_t h = vld1_dup_u16(reinterpret_cast<const uint16_t*>(p));
    h = vld1_lane_u16(reinterpret_cast<const uint16_t*>(p + stride), h, 1);
    h = vld1_lane_u16(reinterpret_cast<const uint16_t*>(p + 2 * stride), h, 2);
    h = vld1_lane_u16(reinterpret_cast<const uint16_t*>(p + 3 * stride), h, 3);
    return vcvt_f32_f16(vreinterpret_f16_u16(h));
}

// The reducing kernel for legacy 32-blocks, rows [r0, r1) (neon_legacy.cpp).
void reduce_legacy(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec,
                   float* y, int64_t ldy, int pair);

// The row-lane kernels, rows [r0, r1) in groups of neon::ROWLANE_ROWS: legacy 32-blocks (neon_legacy.cpp)
// and Q4_K/Q5_K, Block BlockQ4K or BlockQ5K (neon_rowlane.cpp).
void rowlane_legacy(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec,
                    float* y, int64_t ldy, int pair);
template <typename Block>
void rowlane_kquant_rows(const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec,
                         float* y, int64_t ldy, GGMLType wt, int pair);

// Q4_K/Q5_K scales of one block in registers: sc for sub-blocks 0-3 and 4-7, mn for 0-7 (the unpacking is
// described at q4k_unpack_scales in neon.cpp). Reads 16 bytes from s: the block's qh or qs follow its 12
// scale bytes.
struct Scales8 {
    int32x4_t lo, hi;
    int16x8_t mn;
};

inline Scales8 q4k_scales(const uint8_t* s) {
    const uint8x16_t v = vld1q_u8(s);
    const uint8x8_t a = vqtbl1_u8(v, vcreate_u8(0x0302010003020100ULL));
    const uint8x8_t b = vqtbl1_u8(v, vcreate_u8(0x0706050407060504ULL));
    const uint8x8_t c = vqtbl1_u8(v, vcreate_u8(0x0B0A09080B0A0908ULL));
    const uint8x8_t first4 = vcreate_u8(0x00000000FFFFFFFFULL), m63 = vdup_n_u8(63), m15 = vdup_n_u8(15);
    const uint8x8_t sc = vbsl_u8(first4, vand_u8(a, m63), vorr_u8(vand_u8(c, m15), vshl_n_u8(vshr_n_u8(a, 6), 4)));
    const uint8x8_t mn = vbsl_u8(first4, vand_u8(b, m63), vorr_u8(vshr_n_u8(c, 4), vshl_n_u8(vshr_n_u8(b, 6), 4)));
    const uint16x8_t sc16 = vmovl_u8(sc);
    return {vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(sc16))), vreinterpretq_s32_u32(vmovl_high_u16(sc16)),
            vreinterpretq_s16_u16(vmovl_u8(mn))};
}

// The variant's entries, with the contracts of matmul_simd and quantize_blocks_simd (kernels.h).
bool matmul(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts,
            const float* x, int n_rec, float* y, int64_t ldy, int pair);
bool quantize_blocks(const float* x, int64_t n_blocks, int ablk, int8_t* qs, float* d);
// Over packed weights (neon_packed.cpp), the contract of matmul_packed_simd (kernels.h).
bool matmul_packed(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec,
                   float* y, int64_t ldy, int pair);

}  // namespace lg::quant::LG_NEON_NS

// The entries of the dotprod variant (neon_dotprod.cpp), for arm/dispatch.cpp.
namespace lg::quant::neon_dotprod {
bool matmul(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts,
            const float* x, int n_rec, float* y, int64_t ldy, int pair);
bool quantize_blocks(const float* x, int64_t n_blocks, int ablk, int8_t* qs, float* d);
bool matmul_packed(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec,
                   float* y, int64_t ldy, int pair);
}  // namespace lg::quant::neon_dotprod

// The entries of the i8mm variant (neon_i8mm.cpp), for arm/dispatch.cpp; row_pairs: the types whose packed
// matrices take the row-pair layout that its smmla kernels read (kernels.h: packed_row_pairs).
namespace lg::quant::neon_i8mm {
bool matmul(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts,
            const float* x, int n_rec, float* y, int64_t ldy, int pair);
bool quantize_blocks(const float* x, int64_t n_blocks, int ablk, int8_t* qs, float* d);
bool matmul_packed(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec,
                   float* y, int64_t ldy, int pair);
bool row_pairs(GGMLType wt);
}  // namespace lg::quant::neon_i8mm

#endif

// Internal interface between the quant dispatch (quant.cpp) and its kernels (scalar.cpp, x86/, arm/).
// Not for the engine: it uses quant.h.
//
// A record is one int8-quantized activation vector in a prepared buffer (blocks.h: values, sums, scales).
// With ActPrecision::Q8 one input vector (token) gives one record; with Q8X2 it gives two (the high
// term and the quantized residual), which sum into one output (store_out, pair = 2). The kernels count
// records: n_rec (R in short), never tokens.
#pragma once
#include <cstdint>

#include "quant/quant.h"

// Which SIMD kernels are compiled in: exactly one of x86/avx512.cpp, x86/avx2.cpp, arm/neon.cpp, or the
// fallback in scalar.cpp defines matmul_simd / simd_name.
#if defined(__aarch64__) && defined(__ARM_NEON)
#define LG_SIMD_NEON 1
#elif defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__) && \
    defined(__F16C__) && defined(__FMA__)
#define LG_SIMD_AVX512 1
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define LG_SIMD_AVX2 1
#else
#define LG_SIMD_NONE 1
#endif

namespace lg {

namespace quant {
// Kernel families, named alike on every ISA (namespace lg::quant::<isa>; each ISA's plan.h chooses):
//   reduce        one weight row at a time against a tile of records, lanes reduced per block (<isa>.cpp);
//                 reduce_rows8: 8 rows' block sums folded into one vector, lane = row (AVX2 Q6_K)
//   rowlane       weight rows in vector lanes, record bytes broadcast (<isa>_rowlane.cpp); _one_token:
//                 the variant for one token's records, _pair: two row groups a pass
//   broadcast     records in vector lanes, decoded weights broadcast (<isa>_broadcast.cpp); _g2, _g4:
//                 two or four lanes per record
// Legacy 32-block types have their kernels of every family in <isa>_legacy.cpp.
enum class Kernel { none, reduce, reduce_rows8, rowlane, rowlane_one_token, rowlane_pair, broadcast, broadcast_g2, broadcast_g4,
                    reduce_one_token };
}  // namespace quant

int64_t quant_block_elems(GGMLType t);               // 256, 32, or 1 for float types
void quant_check(GGMLType t, int64_t K, const char* what);  // throws std::invalid_argument
int64_t ggml_bytes_per_block32(GGMLType wt);        // legacy 32-element block bytes, 0 otherwise

// The compiled-in SIMD kernel; returns false when it has none for `wt` (scalar then runs).
// Same contract and results as matmul_scalar (see the canonical order in blocks.h).
// `acts` points at the first record (past the header), n_rec records; pair = 2 when records come in
// (high, residual) pairs that sum into one output (see store_out).
bool matmul_simd(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1,
                 const uint8_t* acts, const float* x, int n_rec, float* y, int64_t ldy, int pair);
// The SIMD kernels over packed weights (quant.h, pack_weights), rows [r0, r1) multiples of PACK_ROWS; false
// when this path has none for wt. Only aarch64 defines it (arm/dispatch.cpp).
bool matmul_packed_simd(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts,
                        int n_rec, float* y, int64_t ldy, int pair);
// Whether packed matrices of wt use the row-pair layout (quant/repack.cpp: chunk_at), which the aarch64 i8mm
// variant's smmla kernels read; decided once per process with the variant (arm/dispatch.cpp), else false.
bool packed_row_pairs(GGMLType wt);
void matmul_scalar_records(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts,
                           const float* x, int n_rec, float* y, int64_t ldy, int pair);
const char* simd_name();

// Kernel variants of a shape (quant.h, kernel_variants): the compiled-in ISA's names into names[0..n),
// n <= MAX_KERNEL_VARIANTS, names[0] = "static"; kernel_variant_index: the table's choice (0: static).
constexpr int MAX_KERNEL_VARIANTS = 8;
int simd_variant_names(GGMLType wt, int64_t K, int n_rec, const char** names);
int kernel_variant_index(GGMLType wt, int64_t K, int n_rec);

// Quantize n_blocks blocks of ablk floats to int8 as prepare_acts defines it (round half to even
// of x * (127 / amax), scale amax / 127); false when this path has no SIMD version. Must be
// bit-identical to the scalar loop in quant.cpp.
bool quantize_blocks_simd(const float* x, int64_t n_blocks, int ablk, int8_t* qs, float* d);

}  // namespace lg

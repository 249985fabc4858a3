// Quantized block formats (GGUF/ggml layouts), scalar reference dequantizers, and the fused
// quantized matrix kernels the forward pass uses. Knows nothing about models or threads:
// callers partition work by output rows.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>
#include "gguf.h"

namespace lg {

// Block structs (packed, static_assert'ed sizes) live in quant/blocks.h.

// True for the weight types the engine runs: Q4_K, Q6_K, Q5_0, Q8_0, Q4_1, F16, F32
// (plus any others quant.cpp implements).
bool quant_supported(GGMLType t);

// Bytes of one row of K elements of type t (K a multiple of the block size).
int64_t quant_row_bytes(GGMLType t, int64_t K);

// Scalar reference: dequantize n elements (n % block_elems == 0) from src to dst.
// Must equal gguf.quants.dequantize bit-for-bit.
void dequantize_row(GGMLType t, const void* src, float* dst, int64_t n);

// ---- matrix kernels -------------------------------------------------------------------
// y[t*ldy + r] = dot(W row r, x[t*K .. t*K+K)) for t in [0,T), r in [r0,r1).
// W is row-major with rows of K elements of type `wt` (row stride = row bytes), in place.
//
// Activations are first prepared once per input (e.g. quantized to q8 blocks for
// integer dot products) into a caller-owned buffer of act_buffer_bytes(wt, K, T) bytes;
// every row range then reuses it. This is what lets many threads share one preparation.
//
// BATCH INVARIANCE (required): the value written to y[t][r] depends only on W row r and
// x[t] -- never on T, r0/r1 or the thread count. One accumulation order for every T.
// The kernel is weight-stationary: each weight block is loaded/decoded once and applied
// to all T activation vectors.
//
// Precision of prepared activations. Q8: one int8 per element with a per-block scale (the
// llama.cpp scheme, fastest). Q8X2 (default): a second int8 term quantizes the residual,
// x ~ d1*q1 + d2*q2, ~16-bit accurate; the kernels run the two terms as paired vectors over the
// same weight decode (no extra weight traffic; the integer work of 2T vectors). Why the default: Q8
// alone drifts visibly from fp32 on the correctness gate, Q8X2 does not
// (docs/perf/2026-11-30-q8x2-precision.md). One precision per engine: batch invariance
// holds within a precision, not across. The buffer records its precision, activation kind, K
// and T in a header; matmul throws std::invalid_argument when they do not match its call.
// Weight types with the same activation kind (Q4_K/Q5_K/Q6_K; or Q4_0/Q4_1/Q5_0/Q5_1/Q8_0) can
// share one prepared buffer.
enum class ActPrecision : uint32_t { Q8 = 0, Q8X2 = 1 };
ActPrecision parse_act_precision(const std::string& name);  // "q8x2" or "q8"; throws naming both
const char* act_precision_name(ActPrecision p);
int records_per_vector(ActPrecision p);  // int8 records a prepared vector holds: 2 for Q8X2, 1 for Q8
size_t act_buffer_bytes(GGMLType wt, int64_t K, int T, ActPrecision prec = ActPrecision::Q8X2);
void prepare_acts(GGMLType wt, const float* x, int64_t K, int T, uint8_t* act_buf,
                  ActPrecision prec = ActPrecision::Q8X2);
// The same, for vectors [t0, t1) of a T-vector buffer only (threads may prepare disjoint ranges of
// one buffer; the call with t0 == 0 writes the header). Records do not depend on the split.
void prepare_acts_range(GGMLType wt, const float* x, int64_t K, int T, int t0, int t1, uint8_t* act_buf,
                        ActPrecision prec = ActPrecision::Q8X2);
void matmul(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1,
            const uint8_t* act_buf, const float* x, int T, float* y, int64_t ldy);

// The same product computed by the scalar path only (reference for SIMD tests).
void matmul_scalar(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1,
                   const uint8_t* act_buf, const float* x, int T, float* y, int64_t ldy);

// Kernels: quant/x86/avx512*.cpp, quant/x86/avx2*.cpp or quant/arm/neon*.cpp, chosen at compile time
// (quant/kernels.h); all are bit-identical to the scalar path. Name of the one compiled in ("avx512", "avx2", "neon", "scalar").
const char* quant_simd_name();

// ---- packed weights (row-interleaved groups of PACK_ROWS rows; layouts in quant/repack.cpp) ------------
// On aarch64 the engine packs every quantized matrix (Q4_0 .. Q8_0, Q4_K, Q5_K, Q6_K) in place at load, so that the NEON
// kernels run four rows per by-element sdot; the bytes of a matrix stay its bytes (no second copy). Results equal
// matmul on the unpacked matrix bit for bit (BATCH INVARIANCE as above), for any [r0, r1).
constexpr int PACK_ROWS = 4;
bool pack_type(GGMLType wt);  // a packed layout exists for wt
bool packed_kernels();        // this build has SIMD kernels over packed layouts (else matmul_packed unpacks)
// rows % PACK_ROWS == 0; throws std::invalid_argument otherwise or for a type without a packed layout.
void pack_weights(GGMLType wt, uint8_t* W, int64_t rows, int64_t K);
// Groups [g0, g1) of a packed matrix back to GGUF rows 4 g0 .. 4 g1 at out.
void unpack_weight_rows(GGMLType wt, const uint8_t* W, int64_t K, int64_t g0, int64_t g1, uint8_t* out);
void matmul_packed(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1,
                   const uint8_t* act_buf, const float* x, int T, float* y, int64_t ldy);

// ---- kernel variants (the calibrated plan, quant/variants.cpp) -------------------------------
// Every kernel variant that can run a (weight type, K, records) shape gives the same bits, so which one
// runs is a speed choice. Variant 0, "static", is the compiled-in plan (x86/plan.h); the others are
// named per ISA (kernels.h). A shape with no entry in the table runs the static plan. Records: the
// int8 records of a call (T vectors x records_per_vector). Writers must not race each other's reads of
// kernel_variant_table(); matmul calls may run meanwhile (they only change speed).
struct KernelChoice {
    GGMLType type;
    int64_t K;
    int n_rec;
    std::string variant;
};
std::vector<std::string> kernel_variants(GGMLType wt, int64_t K, int n_rec);  // "static" first
void set_kernel_variant(GGMLType wt, int64_t K, int n_rec, const std::string& name);  // throws on an unknown name
void clear_kernel_variants();  // back to the static plan for every shape
std::vector<KernelChoice> kernel_variant_table();

}  // namespace lg

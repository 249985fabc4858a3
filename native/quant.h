// Quantized block formats (GGUF/ggml layouts), scalar reference dequantizers, and the fused
// quantized matrix kernels the forward pass uses. Knows nothing about models or threads:
// callers partition work by output rows.
#pragma once
#include <cstddef>
#include <cstdint>
#include "gguf.h"

namespace lg {

// Block structs (packed, static_assert'ed sizes) live in quant.cpp / quant_blocks.h.

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
size_t act_buffer_bytes(GGMLType wt, int64_t K, int T);
void prepare_acts(GGMLType wt, const float* x, int64_t K, int T, uint8_t* act_buf);
void matmul(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1,
            const uint8_t* act_buf, const float* x, int T, float* y, int64_t ldy);

// The same product computed by the scalar path only (reference for SIMD tests).
void matmul_scalar(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1,
                   const uint8_t* act_buf, const float* x, int T, float* y, int64_t ldy);

// Name of the SIMD path compiled in ("avx512", "avx2", "neon", "scalar").
const char* quant_simd_name();

}  // namespace lg

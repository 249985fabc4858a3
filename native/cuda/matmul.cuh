// Quantized matrix x activations products on the device (T = 1 decode up to T = max_chunk
// prefill/verify, same kernel) and the activation quantizer they read. Knows nothing about
// layers or the KV cache.
#pragma once
#include "common.cuh"

namespace lg {
namespace cuda {

// A weight matrix resident on the device, GGUF blocks as stored: rows of `cols` elements.
struct DevMatrix {
    const uint8_t* data = nullptr;
    int type = 0;          // ggml type id (lg::GGMLType)
    int64_t rows = 0, cols = 0, row_bytes = 0;
    int lpr = 32;          // lanes cooperating on one row, 4..128 (pick_lanes_per_row)
};

enum class Epi : int {
    Store = 0,   // y = W x (+ bias)
    Add = 1,     // y += W x           (residual)
    SwiGLU = 2,  // y = silu(W x) * y  (gate applied to the up projection already in y)
};

// 256 (K-quants), 32 (legacy quants) or 0 (float weights: no quantized activations).
int act_block(int type);
bool matmul_type_supported(int type);
int pick_lanes_per_row(int64_t rows, int64_t cols);

// Quantize x[T][K] into `pair` records per vector (q, d, s) with blocks of ablk elements (see
// Acts in common.cuh).
void quantize_acts(const float* x, int K, int T, int ablk, int pair, int8_t* q, float* d, int32_t* s,
                   cudaStream_t st);

// out[r][E] = x[r] / sqrt(mean(x[r]^2) + eps) * w, for r < rows (E a multiple of 8).
void rmsnorm(const float* x, const float* w, float* out, int E, float eps, int rows, cudaStream_t st);

// RMSNorm of x[T][E] by w into out, then out quantized as quantize_acts does (one launch; out
// holds the same values as rmsnorm's).
void rmsnorm_quantize(const float* x, const float* w, float* out, int E, float eps, int T, int ablk, int pair,
                      int8_t* q, float* d, int32_t* s, cudaStream_t st);

// y[t*ldy + r] (epilogue) W row r . x[t], for r < W.rows, t < T. The value for (t, r) does not
// depend on T (every t is accumulated alone, in the same order): batch invariance.
void matmul(const DevMatrix& W, const Acts& a, int T, float* y, int ldy, const float* bias, Epi epi,
            cudaStream_t st);

// y[t*ldy + r] = silu(gate row r . x[t]) * (up row r . x[t]): the Store of up then the SwiGLU of
// gate in one launch, bit-identical to the two (each dot accumulated the same way). Only for
// quantized gate and up of one type and shape (swiglu_fusable).
bool swiglu_fusable(const DevMatrix& gate, const DevMatrix& up);

// y[i] = W[i] x (+ bias[i], nullable) for three quantized matrices of one type, row length and
// lanes per row (group_fusable; q, k and v), in one launch: the values of three matmul() calls.
bool group_fusable(const DevMatrix& a, const DevMatrix& b, const DevMatrix& c);
void matmul3(const DevMatrix* const W[3], const Acts& a, int T, float* const y[3], const int ldy[3],
             const float* const bias[3], cudaStream_t st);
void matmul_swiglu(const DevMatrix& gate, const DevMatrix& up, const Acts& a, int T, float* y, int ldy,
                   cudaStream_t st);

}  // namespace cuda
}  // namespace lg

// Kernels for quantized matmul: one output row per group of `lpr` lanes, each lane walking
// 32-element units of the row with dp4a on int8 activations; float weights use fmaf on x.
// Knows nothing about layers; see matmul.cuh for the contract.
#include "matmul.cuh"
#include "qdot.cuh"

namespace lg {
namespace cuda {

int act_block(int type) {
    switch (type) {
        case W_Q4_K: case W_Q6_K: return 256;
        case W_Q4_0: case W_Q4_1: case W_Q5_0: case W_Q8_0: return 32;
        default: return 0;
    }
}

bool matmul_type_supported(int type) {
    switch (type) {
        case W_F32: case W_F16: case W_Q4_0: case W_Q4_1: case W_Q5_0: case W_Q8_0: case W_Q4_K: case W_Q6_K:
            return true;
        default: return false;
    }
}

int pick_lanes_per_row(int64_t cols) {
    const int64_t units = cols / UNIT;
    // Largest lane count that splits the units evenly with >= 2 units a lane; balance matters
    // more than width when K/32 is small (1536 -> 16 lanes x 3, 8960 -> 8 x 35, 896 -> 4 x 7).
    for (int lpr : {32, 16, 8, 4, 2})
        if (units % lpr == 0 && units / lpr >= 2) return lpr;
    return units >= 64 ? 32 : 8;
}

// ---------------------------------------------------------------------------- activations

__global__ void quantize_kernel(const float* __restrict__ x, int K, int T, int ablk, int8_t* __restrict__ q,
                                float* __restrict__ d, int32_t* __restrict__ s) {
    const int warps = blockDim.x / WARP;
    const int gw = blockIdx.x * warps + threadIdx.x / WARP, lane = threadIdx.x % WARP;
    const int nb = K / ablk;
    if (gw >= T * nb) return;  // whole warp exits together
    const int t = gw / nb, b = gw % nb;
    const float* xb = x + static_cast<int64_t>(t) * K + static_cast<int64_t>(b) * ablk;
    float amax = 0.0f;
    for (int e = lane; e < ablk; e += WARP) amax = fmaxf(amax, fabsf(xb[e]));
    for (int off = 16; off > 0; off >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
    const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
    int8_t* qb = q + static_cast<int64_t>(t) * K + static_cast<int64_t>(b) * ablk;
    const int units = ablk / UNIT;
    for (int k = 0; k < units; k++) {
        float v = rintf(xb[k * UNIT + lane] * id);  // nearbyint: round half to even, like the CPU
        v = fminf(127.0f, fmaxf(-127.0f, v));
        const int qi = static_cast<int>(v);
        qb[k * UNIT + lane] = static_cast<int8_t>(qi);
        int sum = qi;
        for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
        if (lane == 0) s[static_cast<int64_t>(t) * (K / UNIT) + b * units + k] = sum;
    }
    if (lane == 0) d[static_cast<int64_t>(t) * nb + b] = amax / 127.0f;
}

void quantize_acts(const float* x, int K, int T, int ablk, int8_t* q, float* d, int32_t* s, cudaStream_t st) {
    const int warps = 4, n = T * (K / ablk);
    quantize_kernel<<<(n + warps - 1) / warps, warps * WARP, 0, st>>>(x, K, T, ablk, q, d, s);
    LG_CUDA_LAUNCHED("quantize_kernel");
}

// ---------------------------------------------------------------------------- matmul

__device__ __forceinline__ float silu_mul(float g, float u) { return g / (1.0f + expf(-g)) * u; }

__device__ __forceinline__ void epilogue(float* y, int64_t idx, float acc, const float* bias, int row, int epi) {
    if (epi == static_cast<int>(Epi::Store)) y[idx] = bias ? acc + bias[row] : acc;
    else if (epi == static_cast<int>(Epi::Add)) y[idx] = y[idx] + acc;
    else y[idx] = silu_mul(acc, y[idx]);
}

// Quantized weights: lanes of a row accumulate their units in order, then a fixed xor-tree.
template <int TYPE, int NT>
__global__ void __launch_bounds__(MATMUL_THREADS)
mm_q_kernel(const uint8_t* __restrict__ W, int64_t row_bytes, int n_rows, int K, int lpr, Acts a, int T,
            float* y, int ldy, const float* __restrict__ bias, int epi) {
    const int rows_per_block = MATMUL_THREADS / lpr;
    const int row = blockIdx.x * rows_per_block + threadIdx.x / lpr;
    const int lane = threadIdx.x % lpr;
    const bool valid = row < n_rows;
    const uint8_t* wrow = W + static_cast<int64_t>(valid ? row : 0) * row_bytes;
    const int units = K / UNIT, ublk = a.ablk / UNIT, kd = K / a.ablk;
    for (int t0 = 0; t0 < T; t0 += NT) {
        float acc[NT];
#pragma unroll
        for (int j = 0; j < NT; j++) acc[j] = 0.0f;
        if (valid) {
            for (int u = lane; u < units; u += lpr) {
                UnitW w;
                load_unit<TYPE>(wrow, u, w);
#pragma unroll
                for (int j = 0; j < NT; j++) {
                    const int t = t0 + j;
                    if (t < T) {
                        const int4* aq = reinterpret_cast<const int4*>(a.q + static_cast<int64_t>(t) * K + u * UNIT);
                        const int4 a0 = aq[0], a1 = aq[1];
                        int lo = __dp4a(w.w[0], a0.x, 0);
                        lo = __dp4a(w.w[1], a0.y, lo);
                        lo = __dp4a(w.w[2], a0.z, lo);
                        lo = __dp4a(w.w[3], a0.w, lo);
                        int hi = __dp4a(w.w[4], a1.x, 0);
                        hi = __dp4a(w.w[5], a1.y, hi);
                        hi = __dp4a(w.w[6], a1.z, hi);
                        hi = __dp4a(w.w[7], a1.w, hi);
                        const float dx = a.d[static_cast<int64_t>(t) * kd + u / ublk];
                        acc[j] = fmaf(w.f1 * dx, static_cast<float>(w.sc0 * lo + w.sc1 * hi), acc[j]);
                        if constexpr (TYPE == W_Q4_K || TYPE == W_Q4_1)
                            acc[j] = fmaf(w.f2 * dx, static_cast<float>(w.mn * a.s[static_cast<int64_t>(t) * units + u]), acc[j]);
                    }
                }
            }
        }
#pragma unroll
        for (int j = 0; j < NT; j++)
            for (int off = lpr / 2; off > 0; off >>= 1) acc[j] += __shfl_xor_sync(0xffffffffu, acc[j], off);
        if (valid && lane == 0) {
#pragma unroll
            for (int j = 0; j < NT; j++)
                if (t0 + j < T) epilogue(y, static_cast<int64_t>(t0 + j) * ldy + row, acc[j], bias, row, epi);
        }
    }
}

// Float weights (F16/F32): same layout, fmaf on the float activations.
template <int TYPE, int NT>
__global__ void __launch_bounds__(MATMUL_THREADS)
mm_f_kernel(const uint8_t* __restrict__ W, int64_t row_bytes, int n_rows, int K, int lpr, Acts a, int T,
            float* y, int ldy, const float* __restrict__ bias, int epi) {
    const int rows_per_block = MATMUL_THREADS / lpr;
    const int row = blockIdx.x * rows_per_block + threadIdx.x / lpr;
    const int lane = threadIdx.x % lpr;
    const bool valid = row < n_rows;
    const uint8_t* wrow = W + static_cast<int64_t>(valid ? row : 0) * row_bytes;
    const int units = K / UNIT;
    for (int t0 = 0; t0 < T; t0 += NT) {
        float acc[NT];
#pragma unroll
        for (int j = 0; j < NT; j++) acc[j] = 0.0f;
        if (valid) {
            for (int u = lane; u < units; u += lpr) {
                for (int e = 0; e < UNIT; e++) {
                    const float wv = dequant_elem<TYPE>(wrow, u * UNIT + e);
#pragma unroll
                    for (int j = 0; j < NT; j++)
                        if (t0 + j < T) acc[j] = fmaf(wv, a.x[static_cast<int64_t>(t0 + j) * K + u * UNIT + e], acc[j]);
                }
            }
        }
#pragma unroll
        for (int j = 0; j < NT; j++)
            for (int off = lpr / 2; off > 0; off >>= 1) acc[j] += __shfl_xor_sync(0xffffffffu, acc[j], off);
        if (valid && lane == 0) {
#pragma unroll
            for (int j = 0; j < NT; j++)
                if (t0 + j < T) epilogue(y, static_cast<int64_t>(t0 + j) * ldy + row, acc[j], bias, row, epi);
        }
    }
}

template <int TYPE, int NT>
static void launch_typed(const DevMatrix& W, const Acts& a, int T, float* y, int ldy, const float* bias, Epi epi,
                         cudaStream_t st) {
    const int rows_per_block = MATMUL_THREADS / W.lpr;
    const int grid = static_cast<int>((W.rows + rows_per_block - 1) / rows_per_block);
    if constexpr (TYPE == W_F32 || TYPE == W_F16)
        mm_f_kernel<TYPE, NT><<<grid, MATMUL_THREADS, 0, st>>>(W.data, W.row_bytes, static_cast<int>(W.rows),
                                                                static_cast<int>(W.cols), W.lpr, a, T, y, ldy, bias,
                                                                static_cast<int>(epi));
    else
        mm_q_kernel<TYPE, NT><<<grid, MATMUL_THREADS, 0, st>>>(W.data, W.row_bytes, static_cast<int>(W.rows),
                                                                static_cast<int>(W.cols), W.lpr, a, T, y, ldy, bias,
                                                                static_cast<int>(epi));
    LG_CUDA_LAUNCHED("matmul kernel");
}

template <int TYPE>
static void launch_nt(const DevMatrix& W, const Acts& a, int T, float* y, int ldy, const float* bias, Epi epi,
                      cudaStream_t st) {
    if (T == 1) launch_typed<TYPE, 1>(W, a, T, y, ldy, bias, epi, st);
    else launch_typed<TYPE, 8>(W, a, T, y, ldy, bias, epi, st);
}

void matmul(const DevMatrix& W, const Acts& a, int T, float* y, int ldy, const float* bias, Epi epi, cudaStream_t st) {
    switch (W.type) {
        case W_Q4_K: return launch_nt<W_Q4_K>(W, a, T, y, ldy, bias, epi, st);
        case W_Q6_K: return launch_nt<W_Q6_K>(W, a, T, y, ldy, bias, epi, st);
        case W_Q5_0: return launch_nt<W_Q5_0>(W, a, T, y, ldy, bias, epi, st);
        case W_Q8_0: return launch_nt<W_Q8_0>(W, a, T, y, ldy, bias, epi, st);
        case W_Q4_1: return launch_nt<W_Q4_1>(W, a, T, y, ldy, bias, epi, st);
        case W_Q4_0: return launch_nt<W_Q4_0>(W, a, T, y, ldy, bias, epi, st);
        case W_F16: return launch_nt<W_F16>(W, a, T, y, ldy, bias, epi, st);
        case W_F32: return launch_nt<W_F32>(W, a, T, y, ldy, bias, epi, st);
        default: throw CudaError("matmul: unsupported weight type id " + std::to_string(W.type));
    }
}

}  // namespace cuda
}  // namespace lg

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

int pick_lanes_per_row(int64_t rows, int64_t cols) {
    // Enough lanes that a T = 1 product has ~2^17 threads in flight (the H200 holds 132 x 2048;
    // memory-level parallelism is what a decode product needs), while each lane keeps at least
    // one 32-element unit: 1536 x 8960 (ffn_down) -> 128 lanes (4 warps) a row, 1536 x 1536 -> 32,
    // 8960 x 1536 -> 16, 151936 x 1536 (output) -> 4. One choice per matrix, whatever T is.
    const int64_t units = cols / UNIT;
    int lpr = 4;
    while (lpr < MATMUL_THREADS && rows * lpr < (int64_t{1} << 17) && units >= 2 * lpr) lpr *= 2;
    return lpr;
}

// ---------------------------------------------------------------------------- activations

// One warp quantizes block b of vector t (xb: its ablk floats); lane i holds elements i, i + 32,
// ... (ablk <= 256). Record k + 1 quantizes what record k left over (x - d*q), as
// prepare_acts_range does.
__device__ __forceinline__ void quantize_block_warp(const float* xb, int K, int ablk, int pair, int t, int b, int lane,
                                                    int8_t* __restrict__ q, float* __restrict__ d,
                                                    int32_t* __restrict__ s) {
    constexpr int MAX_UNITS = QK_K_ELEMS / UNIT;
    const int units = ablk / UNIT, nb = K / ablk;
    float r[MAX_UNITS];
#pragma unroll
    for (int k = 0; k < MAX_UNITS; k++) r[k] = k < units ? xb[k * UNIT + lane] : 0.0f;
    for (int rec = 0; rec < pair; rec++) {
        float amax = 0.0f;
#pragma unroll
        for (int k = 0; k < MAX_UNITS; k++) amax = fmaxf(amax, fabsf(r[k]));
        for (int off = 16; off > 0; off >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
        const float id = amax > 0.0f ? 127.0f / amax : 0.0f, dd = amax / 127.0f;
        const int64_t ri = static_cast<int64_t>(t) * pair + rec;
        int8_t* qb = q + ri * K + static_cast<int64_t>(b) * ablk;
#pragma unroll
        for (int k = 0; k < MAX_UNITS; k++) {
            if (k >= units) break;
            float v = rintf(__fmul_rn(r[k], id));  // nearbyint: round half to even, like the CPU
            v = fminf(127.0f, fmaxf(-127.0f, v));
            const int qi = static_cast<int>(v);
            qb[k * UNIT + lane] = static_cast<int8_t>(qi);
            r[k] = __fsub_rn(r[k], __fmul_rn(dd, v));  // the residual, unfused as written on the CPU
            int sum = qi;
            for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
            if (lane == 0) s[ri * (K / UNIT) + b * units + k] = sum;
        }
        if (lane == 0) d[ri * nb + b] = dd;
    }
}

// One warp per (vector, block).
__global__ void quantize_kernel(const float* __restrict__ x, int K, int T, int ablk, int pair,
                                int8_t* __restrict__ q, float* __restrict__ d, int32_t* __restrict__ s) {
    const int warps = blockDim.x / WARP;
    const int gw = blockIdx.x * warps + threadIdx.x / WARP, lane = threadIdx.x % WARP;
    const int nb = K / ablk;
    if (gw >= T * nb) return;  // whole warp exits together
    const int t = gw / nb, b = gw % nb;
    quantize_block_warp(x + static_cast<int64_t>(t) * K + static_cast<int64_t>(b) * ablk, K, ablk, pair, t, b, lane,
                        q, d, s);
}

static void check_act_shape(int ablk, int pair) {
    if (ablk > QK_K_ELEMS || ablk % UNIT != 0 || pair < 1 || pair > MAX_PAIR)
        throw CudaError("quantize_acts: block " + std::to_string(ablk) + " or records " + std::to_string(pair) +
                        " unsupported");
}

void quantize_acts(const float* x, int K, int T, int ablk, int pair, int8_t* q, float* d, int32_t* s,
                   cudaStream_t st) {
    check_act_shape(ablk, pair);
    const int warps = 4, n = T * (K / ablk);
    quantize_kernel<<<(n + warps - 1) / warps, warps * WARP, 0, st>>>(x, K, T, ablk, pair, q, d, s);
    LG_CUDA_LAUNCHED("quantize_kernel");
}

constexpr int NORM_Q_THREADS = 256;

// RMSNorm of row t (one block), written to out, then the row quantized by the block's warps (the
// two kernels rmsnorm + quantize_acts in one launch; the same values).
__global__ void __launch_bounds__(NORM_Q_THREADS)
rmsnorm_quant_kernel(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ out, int E,
                     float eps, int ablk, int pair, int8_t* __restrict__ q, float* __restrict__ d,
                     int32_t* __restrict__ s) {
    __shared__ float red[NORM_Q_THREADS / WARP];
    const int t = blockIdx.x;
    const float* xr = x + static_cast<int64_t>(t) * E;
    float ss = 0.0f;
    for (int i = threadIdx.x; i < E; i += blockDim.x) ss = fmaf(xr[i], xr[i], ss);
    for (int off = 16; off > 0; off >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, off);
    if (threadIdx.x % WARP == 0) red[threadIdx.x / WARP] = ss;
    __syncthreads();
    float total = 0.0f;
    for (int i = 0; i < NORM_Q_THREADS / WARP; i++) total += red[i];
    const float inv = 1.0f / sqrtf(total / static_cast<float>(E) + eps);
    float* o = out + static_cast<int64_t>(t) * E;
    for (int i = threadIdx.x; i < E; i += blockDim.x) o[i] = xr[i] * inv * w[i];
    __syncthreads();  // the block's writes of o are visible to all its threads
    const int warp = threadIdx.x / WARP, lane = threadIdx.x % WARP;
    for (int b = warp; b < E / ablk; b += NORM_Q_THREADS / WARP)
        quantize_block_warp(o + static_cast<int64_t>(b) * ablk, E, ablk, pair, t, b, lane, q, d, s);
}

void rmsnorm_quantize(const float* x, const float* w, float* out, int E, float eps, int T, int ablk, int pair,
                      int8_t* q, float* d, int32_t* s, cudaStream_t st) {
    check_act_shape(ablk, pair);
    rmsnorm_quant_kernel<<<T, NORM_Q_THREADS, 0, st>>>(x, w, out, E, eps, ablk, pair, q, d, s);
    LG_CUDA_LAUNCHED("rmsnorm_quant_kernel");
}

// ---------------------------------------------------------------------------- matmul

__device__ __forceinline__ float silu_mul(float g, float u) { return g / (1.0f + expf(-g)) * u; }

__device__ __forceinline__ void epilogue(float* y, int64_t idx, float acc, const float* bias, int row, int epi) {
    if (epi == static_cast<int>(Epi::Store)) y[idx] = bias ? acc + bias[row] : acc;
    else if (epi == static_cast<int>(Epi::Add)) y[idx] = y[idx] + acc;
    else y[idx] = silu_mul(acc, y[idx]);
}

// Sum the lanes of each row in one fixed order: an xor-tree inside the warp, then, for rows
// wider than a warp, the warps' sums in index order through shared memory. Every thread of the
// block calls it (it may synchronize the block).
template <int NT>
__device__ __forceinline__ void reduce_rows(float (&acc)[NT], int lpr, float* red) {
    const int width = lpr < WARP ? lpr : WARP;
#pragma unroll
    for (int j = 0; j < NT; j++)
        for (int off = width / 2; off > 0; off >>= 1) acc[j] += __shfl_xor_sync(0xffffffffu, acc[j], off);
    if (lpr <= WARP) return;
    const int warp = threadIdx.x / WARP, warps_per_row = lpr / WARP, first = (threadIdx.x / lpr) * warps_per_row;
    __syncthreads();  // the previous round's reads of red are done
    if (threadIdx.x % WARP == 0) {
#pragma unroll
        for (int j = 0; j < NT; j++) red[warp * NT + j] = acc[j];
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < NT; j++) {
        float sum = 0.0f;
        for (int w = 0; w < warps_per_row; w++) sum += red[(first + w) * NT + j];
        acc[j] = sum;
    }
}

// acc + one unit of quantized row weights (w) times the PAIR records of vector t.
template <int TYPE, int PAIR>
__device__ __forceinline__ float unit_dot(const UnitW& w, const Acts& a, int t, int K, int u, int units, int kd,
                                          int ublk, float acc) {
#pragma unroll
    for (int k = 0; k < PAIR; k++) {
        const int64_t ri = static_cast<int64_t>(t) * PAIR + k;
        const int4* aq = reinterpret_cast<const int4*>(a.q + ri * K + u * UNIT);
        const int4 a0 = aq[0], a1 = aq[1];
        int lo = __dp4a(w.w[0], a0.x, 0);
        lo = __dp4a(w.w[1], a0.y, lo);
        lo = __dp4a(w.w[2], a0.z, lo);
        lo = __dp4a(w.w[3], a0.w, lo);
        int hi = __dp4a(w.w[4], a1.x, 0);
        hi = __dp4a(w.w[5], a1.y, hi);
        hi = __dp4a(w.w[6], a1.z, hi);
        hi = __dp4a(w.w[7], a1.w, hi);
        const float dx = a.d[ri * kd + u / ublk];
        acc = fmaf(w.f1 * dx, static_cast<float>(w.sc0 * lo + w.sc1 * hi), acc);
        if constexpr (TYPE == W_Q4_K || TYPE == W_Q4_1)
            acc = fmaf(w.f2 * dx, static_cast<float>(w.mn * a.s[ri * units + u]), acc);
    }
    return acc;
}

// Quantized weights: `lpr` lanes per row accumulate their units in order (per unit the PAIR
// records of a vector in order), then reduce_rows. DUAL: W is the gate and W2 the up projection
// of the same shape and type; y = silu(W x) * (W2 x) (what Store of up, then SwiGLU of gate,
// compute: the same values in one launch).
template <int TYPE, int NT, int PAIR, bool DUAL>
__global__ void __launch_bounds__(MATMUL_THREADS)
mm_q_kernel(const uint8_t* __restrict__ W, const uint8_t* __restrict__ W2, int64_t row_bytes, int n_rows, int K,
            int lpr, Acts a, int T, float* y, int ldy, const float* __restrict__ bias, int epi) {
    __shared__ float red[MATMUL_THREADS / WARP * NT];
    __shared__ float red2[DUAL ? MATMUL_THREADS / WARP * NT : 1];
    const int rows_per_block = MATMUL_THREADS / lpr;
    const int row = blockIdx.x * rows_per_block + threadIdx.x / lpr;
    const int lane = threadIdx.x % lpr;
    const bool valid = row < n_rows;
    const int64_t roff = static_cast<int64_t>(valid ? row : 0) * row_bytes;
    const uint8_t* wrow = W + roff;
    const uint8_t* wrow2 = DUAL ? W2 + roff : nullptr;
    const int units = K / UNIT, ublk = a.ablk / UNIT, kd = K / a.ablk;
    for (int t0 = 0; t0 < T; t0 += NT) {
        float acc[NT], acc2[NT];
#pragma unroll
        for (int j = 0; j < NT; j++) acc[j] = acc2[j] = 0.0f;
        if (valid) {
            for (int u = lane; u < units; u += lpr) {
                UnitW w, w2;
                load_unit<TYPE>(wrow, u, w);
                if constexpr (DUAL) load_unit<TYPE>(wrow2, u, w2);
#pragma unroll
                for (int j = 0; j < NT; j++) {
                    const int t = t0 + j;
                    if (t < T) {
                        acc[j] = unit_dot<TYPE, PAIR>(w, a, t, K, u, units, kd, ublk, acc[j]);
                        if constexpr (DUAL) acc2[j] = unit_dot<TYPE, PAIR>(w2, a, t, K, u, units, kd, ublk, acc2[j]);
                    }
                }
            }
        }
        reduce_rows<NT>(acc, lpr, red);
        if constexpr (DUAL) reduce_rows<NT>(acc2, lpr, red2);
        if (valid && lane == 0) {
#pragma unroll
            for (int j = 0; j < NT; j++) {
                if (t0 + j >= T) continue;
                const int64_t idx = static_cast<int64_t>(t0 + j) * ldy + row;
                if constexpr (DUAL) y[idx] = silu_mul(acc[j], acc2[j]);
                else epilogue(y, idx, acc[j], bias, row, epi);
            }
        }
    }
}

// Float weights (F16/F32): same layout, fmaf on the float activations.
template <int TYPE, int NT>
__global__ void __launch_bounds__(MATMUL_THREADS)
mm_f_kernel(const uint8_t* __restrict__ W, int64_t row_bytes, int n_rows, int K, int lpr, Acts a, int T,
            float* y, int ldy, const float* __restrict__ bias, int epi) {
    __shared__ float red[MATMUL_THREADS / WARP * NT];
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
        reduce_rows<NT>(acc, lpr, red);
        if (valid && lane == 0) {
#pragma unroll
            for (int j = 0; j < NT; j++)
                if (t0 + j < T) epilogue(y, static_cast<int64_t>(t0 + j) * ldy + row, acc[j], bias, row, epi);
        }
    }
}

template <int TYPE, int NT, int PAIR, bool DUAL>
static void launch_typed(const DevMatrix& W, const DevMatrix* W2, const Acts& a, int T, float* y, int ldy,
                         const float* bias, Epi epi, cudaStream_t st) {
    const int rows_per_block = MATMUL_THREADS / W.lpr;
    const int grid = static_cast<int>((W.rows + rows_per_block - 1) / rows_per_block);
    if constexpr (TYPE == W_F32 || TYPE == W_F16)
        mm_f_kernel<TYPE, NT><<<grid, MATMUL_THREADS, 0, st>>>(W.data, W.row_bytes, static_cast<int>(W.rows),
                                                                static_cast<int>(W.cols), W.lpr, a, T, y, ldy, bias,
                                                                static_cast<int>(epi));
    else
        mm_q_kernel<TYPE, NT, PAIR, DUAL><<<grid, MATMUL_THREADS, 0, st>>>(
            W.data, DUAL ? W2->data : nullptr, W.row_bytes, static_cast<int>(W.rows), static_cast<int>(W.cols), W.lpr,
            a, T, y, ldy, bias, static_cast<int>(epi));
    LG_CUDA_LAUNCHED("matmul kernel");
}

template <int TYPE, int PAIR, bool DUAL>
static void launch_t(const DevMatrix& W, const DevMatrix* W2, const Acts& a, int T, float* y, int ldy,
                     const float* bias, Epi epi, cudaStream_t st) {
    if (T == 1) launch_typed<TYPE, 1, PAIR, DUAL>(W, W2, a, T, y, ldy, bias, epi, st);
    else launch_typed<TYPE, 8, PAIR, DUAL>(W, W2, a, T, y, ldy, bias, epi, st);
}

template <int TYPE>
static void launch_nt(const DevMatrix& W, const DevMatrix* W2, const Acts& a, int T, float* y, int ldy,
                      const float* bias, Epi epi, cudaStream_t st) {
    if constexpr (TYPE == W_F32 || TYPE == W_F16) {  // float activations: no records, no dual kernel
        if (W2) throw CudaError("matmul_swiglu: float weights are not fused");
        launch_t<TYPE, 1, false>(W, nullptr, a, T, y, ldy, bias, epi, st);
    } else if (a.pair != 1 && a.pair != 2) {
        throw CudaError("matmul: activations with " + std::to_string(a.pair) + " records per vector");
    } else if (W2) {
        if (a.pair == 2) launch_t<TYPE, 2, true>(W, W2, a, T, y, ldy, nullptr, Epi::SwiGLU, st);
        else launch_t<TYPE, 1, true>(W, W2, a, T, y, ldy, nullptr, Epi::SwiGLU, st);
    } else {
        if (a.pair == 2) launch_t<TYPE, 2, false>(W, nullptr, a, T, y, ldy, bias, epi, st);
        else launch_t<TYPE, 1, false>(W, nullptr, a, T, y, ldy, bias, epi, st);
    }
}

static void dispatch(const DevMatrix& W, const DevMatrix* W2, const Acts& a, int T, float* y, int ldy,
                     const float* bias, Epi epi, cudaStream_t st) {
    switch (W.type) {
        case W_Q4_K: return launch_nt<W_Q4_K>(W, W2, a, T, y, ldy, bias, epi, st);
        case W_Q6_K: return launch_nt<W_Q6_K>(W, W2, a, T, y, ldy, bias, epi, st);
        case W_Q5_0: return launch_nt<W_Q5_0>(W, W2, a, T, y, ldy, bias, epi, st);
        case W_Q8_0: return launch_nt<W_Q8_0>(W, W2, a, T, y, ldy, bias, epi, st);
        case W_Q4_1: return launch_nt<W_Q4_1>(W, W2, a, T, y, ldy, bias, epi, st);
        case W_Q4_0: return launch_nt<W_Q4_0>(W, W2, a, T, y, ldy, bias, epi, st);
        case W_F16: return launch_nt<W_F16>(W, W2, a, T, y, ldy, bias, epi, st);
        case W_F32: return launch_nt<W_F32>(W, W2, a, T, y, ldy, bias, epi, st);
        default: throw CudaError("matmul: unsupported weight type id " + std::to_string(W.type));
    }
}

void matmul(const DevMatrix& W, const Acts& a, int T, float* y, int ldy, const float* bias, Epi epi, cudaStream_t st) {
    dispatch(W, nullptr, a, T, y, ldy, bias, epi, st);
}

bool swiglu_fusable(const DevMatrix& gate, const DevMatrix& up) {
    return gate.type == up.type && gate.rows == up.rows && gate.cols == up.cols && gate.row_bytes == up.row_bytes &&
           gate.lpr == up.lpr && act_block(gate.type) != 0;
}

void matmul_swiglu(const DevMatrix& gate, const DevMatrix& up, const Acts& a, int T, float* y, int ldy,
                   cudaStream_t st) {
    if (!swiglu_fusable(gate, up)) throw CudaError("matmul_swiglu: gate and up differ in type or shape");
    dispatch(gate, &up, a, T, y, ldy, nullptr, Epi::SwiGLU, st);
}

}  // namespace cuda
}  // namespace lg

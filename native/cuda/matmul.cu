// Kernels for quantized matmul: one output row per group of `lpr` lanes, each lane walking
// 32-element units of the row with dp4a on int8 activations; float weights use fmaf on x; the
// activation quantizer; dispatch (T > 1 to matmul_mma.cu's tensor cores when launch_opts().mma).
// Knows nothing about layers; see matmul.cuh for the contract.
#include "matmul_segs.cuh"
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

// Activations go by SPANS of 256 elements: lane i of a warp holds elements 8i..8i+7 of a span, so
// an activation block (32 or 256 elements) is 4 or 32 adjacent lanes and a 32-element unit 4 lanes:
// maxima and unit sums need 2 to 5 shuffles in all, not per unit.
constexpr int SPAN = 256;
constexpr int NORM_THREADS = 256;

// Quantize a span (r: this lane's 8 values, valid: e0 = its first element < K) into `pair`
// records of vector t, as prepare_acts_range does: record k + 1 quantizes what record k left
// over (x - d*q). Every lane of the warp calls it.
__device__ __forceinline__ void quantize_span(float (&r)[8], bool valid, int K, int ablk, int pair, int t, int e0,
                                              int lane, int8_t* __restrict__ q, float* __restrict__ d,
                                              int32_t* __restrict__ s) {
    const int group = ablk / 8;  // lanes per activation block
    for (int rec = 0; rec < pair; rec++) {
        float amax = 0.0f;
#pragma unroll
        for (int i = 0; i < 8; i++) amax = fmaxf(amax, fabsf(r[i]));
        for (int off = 1; off < group; off <<= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
        const float id = amax > 0.0f ? 127.0f / amax : 0.0f, dd = amax / 127.0f;
        uint32_t packed[2] = {0u, 0u};
        int sum = 0;
#pragma unroll
        for (int i = 0; i < 8; i++) {
            float v = rintf(__fmul_rn(r[i], id));  // nearbyint: round half to even, like the CPU
            v = fminf(127.0f, fmaxf(-127.0f, v));
            const int qi = static_cast<int>(v);
            packed[i / 4] |= (static_cast<uint32_t>(qi) & 0xffu) << (8 * (i % 4));
            sum += qi;
            r[i] = __fsub_rn(r[i], __fmul_rn(dd, v));  // the residual, unfused as written on the CPU
        }
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        if (valid) {
            const int64_t ri = static_cast<int64_t>(t) * pair + rec;
            *reinterpret_cast<uint2*>(q + ri * K + e0) = make_uint2(packed[0], packed[1]);
            if (lane % 4 == 0) s[ri * (K / UNIT) + e0 / UNIT] = sum;
            if (lane % group == 0) d[ri * (K / ablk) + e0 / ablk] = dd;
        }
    }
}

__device__ __forceinline__ void load8(const float* p, float (&v)[8]) {
    const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
    v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
    v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
}

// One warp per (vector, span).
__global__ void quantize_kernel(const float* __restrict__ x, int K, int T, int ablk, int pair,
                                int8_t* __restrict__ q, float* __restrict__ d, int32_t* __restrict__ s) {
    pdl_wait();
    pdl_trigger();
    const int warps = blockDim.x / WARP;
    const int gw = blockIdx.x * warps + threadIdx.x / WARP, lane = threadIdx.x % WARP;
    const int spans = (K + SPAN - 1) / SPAN;
    if (gw >= T * spans) return;  // whole warp exits together
    const int t = gw / spans, e0 = (gw % spans) * SPAN + 8 * lane;
    const bool valid = e0 < K;
    float r[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    if (valid) load8(x + static_cast<int64_t>(t) * K + e0, r);
    quantize_span(r, valid, K, ablk, pair, t, e0, lane, q, d, s);
}

static void check_act_shape(int K, int ablk, int pair) {
    if ((ablk != 32 && ablk != QK_K_ELEMS) || K % ablk != 0 || pair < 1 || pair > MAX_PAIR)
        throw CudaError("quantize_acts: K " + std::to_string(K) + ", block " + std::to_string(ablk) + " or records " +
                        std::to_string(pair) + " unsupported");
}

void quantize_acts(const float* x, int K, int T, int ablk, int pair, int8_t* q, float* d, int32_t* s,
                   cudaStream_t st) {
    check_act_shape(K, ablk, pair);
    const int warps = 4, n = T * ((K + SPAN - 1) / SPAN);
    launch("quantize_kernel", quantize_kernel, dim3((n + warps - 1) / warps), dim3(warps * WARP), 0, st, x, K, T, ablk,
           pair, q, d, s);
}

// RMSNorm of row t (one block; each warp takes spans w, w + 8, ...), written to out, then, when
// ablk > 0, quantized from registers. rmsnorm() is this kernel with ablk = 0, so the fused and
// the separate launches compute the same values.
__global__ void __launch_bounds__(NORM_THREADS)
rmsnorm_quant_kernel(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ out, int E,
                     float eps, int ablk, int pair, int8_t* __restrict__ q, float* __restrict__ d,
                     int32_t* __restrict__ s) {
    constexpr int WARPS = NORM_THREADS / WARP;
    __shared__ float red[WARPS];
    const int t = blockIdx.x, warp = threadIdx.x / WARP, lane = threadIdx.x % WARP;
    const int spans = (E + SPAN - 1) / SPAN;
    float w0[8];  // the norm weights of this lane's first span, read before the wait (a weight: no kernel writes it)
    if (warp * SPAN + 8 * lane < E) load8(w + warp * SPAN + 8 * lane, w0);
    pdl_wait();
    pdl_trigger();
    const float* xr = x + static_cast<int64_t>(t) * E;
    float ss = 0.0f;
    for (int sp = warp; sp < spans; sp += WARPS) {
        const int e0 = sp * SPAN + 8 * lane;
        if (e0 < E) {
            float v[8];
            load8(xr + e0, v);
#pragma unroll
            for (int i = 0; i < 8; i++) ss = fmaf(v[i], v[i], ss);
        }
    }
    for (int off = 16; off > 0; off >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, off);
    if (lane == 0) red[warp] = ss;
    __syncthreads();
    float total = 0.0f;
#pragma unroll
    for (int i = 0; i < WARPS; i++) total += red[i];
    const float inv = 1.0f / sqrtf(total / static_cast<float>(E) + eps);
    float* o = out + static_cast<int64_t>(t) * E;
    for (int sp = warp; sp < spans; sp += WARPS) {
        const int e0 = sp * SPAN + 8 * lane;
        const bool valid = e0 < E;
        float v[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
        if (valid) {
            float wv[8];
            load8(xr + e0, v);
            if (sp == warp) {
#pragma unroll
                for (int i = 0; i < 8; i++) wv[i] = w0[i];
            } else {
                load8(w + e0, wv);
            }
#pragma unroll
            for (int i = 0; i < 8; i++) v[i] = v[i] * inv * wv[i];
            reinterpret_cast<float4*>(o + e0)[0] = make_float4(v[0], v[1], v[2], v[3]);
            reinterpret_cast<float4*>(o + e0)[1] = make_float4(v[4], v[5], v[6], v[7]);
        }
        if (ablk) quantize_span(v, valid, E, ablk, pair, t, e0, lane, q, d, s);
    }
}

void rmsnorm(const float* x, const float* w, float* out, int E, float eps, int rows, cudaStream_t st) {
    if (E % 8 != 0) throw CudaError("rmsnorm: row length " + std::to_string(E) + " is not a multiple of 8");
    launch("rmsnorm_quant_kernel", rmsnorm_quant_kernel, dim3(rows), dim3(NORM_THREADS), 0, st, x, w, out, E, eps, 0, 1,
           static_cast<int8_t*>(nullptr), static_cast<float*>(nullptr), static_cast<int32_t*>(nullptr));
}

void rmsnorm_quantize(const float* x, const float* w, float* out, int E, float eps, int T, int ablk, int pair,
                      int8_t* q, float* d, int32_t* s, cudaStream_t st) {
    check_act_shape(E, ablk, pair);
    launch("rmsnorm_quant_kernel", rmsnorm_quant_kernel, dim3(T), dim3(NORM_THREADS), 0, st, x, w, out, E, eps, ablk,
           pair, q, d, s);
}

// ---------------------------------------------------------------------------- matmul

// Sum the lane partials of each row in lane order, from zero: ((0 + p0) + p1) + ... + p[lpr-1]. The
// tensor-core kernel (mm_mma_kernel) adds its slot partials in this order too, so a row's value is
// the same whichever kernel computes it. red: MATMUL_THREADS * NT floats; every thread of the block
// calls it (it synchronizes the block); the row's lane 0 holds the sums.
template <int NT>
__device__ __forceinline__ void reduce_rows(float (&acc)[NT], int lpr, float* red) {
    __syncthreads();  // the previous round's reads of red are done
#pragma unroll
    for (int j = 0; j < NT; j++) red[j * MATMUL_THREADS + threadIdx.x] = acc[j];
    __syncthreads();
    if (threadIdx.x % lpr != 0) return;
#pragma unroll
    for (int j = 0; j < NT; j++) {
        const float* r = red + j * MATMUL_THREADS + threadIdx.x;
        float sum = 0.0f;
        for (int l = 0; l < lpr; l++) sum += r[l];
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
        acc = fmaf(w.s.f1 * dx, static_cast<float>(w.s.sc0 * lo + w.s.sc1 * hi), acc);
        if constexpr (TYPE == W_Q4_K || TYPE == W_Q4_1)
            acc = fmaf(w.s.f2 * dx, static_cast<float>(w.s.mn * a.s[ri * units + u]), acc);
    }
    return acc;
}

// Quantized weights: `lpr` lanes per row accumulate their units in order (per unit the PAIR
// records of a vector in order), then reduce_rows. DUAL: W is the gate and W2 the up projection
// of the same shape and type; y = silu(W x) * (W2 x) (what Store of up, then SwiGLU of gate,
// compute: the same values in one launch).
template <int TYPE, int NT, int PAIR, bool DUAL>
__global__ void __launch_bounds__(MATMUL_THREADS)
mm_q_kernel(MatSegs segs, int64_t row_bytes, int K, int lpr, Acts a, int T, int epi, int prefetch) {
    __shared__ float red[MATMUL_THREADS * NT];
    __shared__ float red2[DUAL ? MATMUL_THREADS * NT : 1];
    int blk;
    const MatSeg S = find_seg(segs, &blk);
    float* y = S.y;
    const float* bias = S.bias;
    const int ldy = S.ldy;
    const int rows_per_block = MATMUL_THREADS / lpr;
    if (prefetch && threadIdx.x < WARP) prefetch_block_rows(S, DUAL, blk * rows_per_block, rows_per_block, row_bytes);
    pdl_wait();
    pdl_trigger();
    const int row = blk * rows_per_block + threadIdx.x / lpr;
    const int lane = threadIdx.x % lpr;
    const bool valid = row < S.n_rows;
    const int64_t roff = static_cast<int64_t>(valid ? row : 0) * row_bytes;
    const uint8_t* wrow = S.W + roff;
    const uint8_t* wrow2 = DUAL ? S.W2 + roff : nullptr;
    const int units = K / UNIT, ublk = a.ablk / UNIT, kd = K / a.ablk;
    for (int t0 = 0; t0 < T; t0 += NT) {
        float acc[NT], acc2[NT];
#pragma unroll
        for (int j = 0; j < NT; j++) acc[j] = acc2[j] = 0.0f;
        if (valid) {
#pragma unroll 4
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
    __shared__ float red[MATMUL_THREADS * NT];
    pdl_wait();
    pdl_trigger();
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

// ---------------------------------------------------------------------------- dispatch

// The kernel a product runs on: tensor cores for quantized weights over T > 1 tokens (unless
// launch_opts().mma is off), else dp4a / fmaf lanes (mm_q_kernel, mm_f_kernel).
static bool use_mma(const DevMatrix& W, int T) { return T > 1 && launch_opts().mma && act_block(W.type) != 0; }

static int rows_per_block(const DevMatrix& W, int T) { return use_mma(W, T) ? MMA_ROWS : MATMUL_THREADS / W.lpr; }

template <int TYPE, int NT, int PAIR, bool DUAL>
static void launch_typed(const DevMatrix& W, const MatSegs& segs, const Acts& a, int T, Epi epi, cudaStream_t st) {
    const int grid = total_blocks(segs);
    const int K = static_cast<int>(W.cols), pf = launch_opts().pdl ? 1 : 0;
    if constexpr (TYPE == W_F32 || TYPE == W_F16) {
        const MatSeg& S = segs.s[0];
        launch("mm_f_kernel", mm_f_kernel<TYPE, NT>, dim3(grid), dim3(MATMUL_THREADS), 0, st, S.W, W.row_bytes, S.n_rows,
               K, W.lpr, a, T, S.y, S.ldy, S.bias, static_cast<int>(epi));
    } else {
        launch("mm_q_kernel", mm_q_kernel<TYPE, NT, PAIR, DUAL>, dim3(grid), dim3(MATMUL_THREADS), 0, st, segs,
               W.row_bytes, K, W.lpr, a, T, static_cast<int>(epi), pf);
    }
}

template <int TYPE, int PAIR, bool DUAL>
static void launch_t(const DevMatrix& W, const MatSegs& segs, const Acts& a, int T, Epi epi, cudaStream_t st) {
    if (T == 1) launch_typed<TYPE, 1, PAIR, DUAL>(W, segs, a, T, epi, st);
    else launch_typed<TYPE, 8, PAIR, DUAL>(W, segs, a, T, epi, st);
}

template <int TYPE>
static void launch_nt(const DevMatrix& W, const MatSegs& segs, bool dual, const Acts& a, int T, Epi epi,
                      cudaStream_t st) {
    if constexpr (TYPE == W_F32 || TYPE == W_F16) {  // float activations: no records, one matrix a launch
        if (dual || segs.n != 1) throw CudaError("matmul: float weights run one matrix a launch");
        launch_t<TYPE, 1, false>(W, segs, a, T, epi, st);
    } else if (a.pair != 1 && a.pair != 2) {
        throw CudaError("matmul: activations with " + std::to_string(a.pair) + " records per vector");
    } else if (dual) {
        if (a.pair == 2) launch_t<TYPE, 2, true>(W, segs, a, T, Epi::SwiGLU, st);
        else launch_t<TYPE, 1, true>(W, segs, a, T, Epi::SwiGLU, st);
    } else {
        if (a.pair == 2) launch_t<TYPE, 2, false>(W, segs, a, T, epi, st);
        else launch_t<TYPE, 1, false>(W, segs, a, T, epi, st);
    }
}

static void dispatch(const DevMatrix& W, const MatSegs& segs, bool dual, const Acts& a, int T, Epi epi,
                     cudaStream_t st) {
    if (use_mma(W, T))
        return launch_mma(W.type, dual, segs, W.row_bytes, static_cast<int>(W.cols), W.lpr, a, T, epi,
                          launch_opts().pdl, st);
    switch (W.type) {
        case W_Q4_K: return launch_nt<W_Q4_K>(W, segs, dual, a, T, epi, st);
        case W_Q6_K: return launch_nt<W_Q6_K>(W, segs, dual, a, T, epi, st);
        case W_Q5_0: return launch_nt<W_Q5_0>(W, segs, dual, a, T, epi, st);
        case W_Q8_0: return launch_nt<W_Q8_0>(W, segs, dual, a, T, epi, st);
        case W_Q4_1: return launch_nt<W_Q4_1>(W, segs, dual, a, T, epi, st);
        case W_Q4_0: return launch_nt<W_Q4_0>(W, segs, dual, a, T, epi, st);
        case W_F16: return launch_nt<W_F16>(W, segs, dual, a, T, epi, st);
        case W_F32: return launch_nt<W_F32>(W, segs, dual, a, T, epi, st);
        default: throw CudaError("matmul: unsupported weight type id " + std::to_string(W.type));
    }
}

static MatSeg segment(const DevMatrix& W, const DevMatrix* W2, int T, float* y, int ldy, const float* bias) {
    const int per = rows_per_block(W, T);
    return MatSeg{W.data, W2 ? W2->data : nullptr, y, bias, static_cast<int>(W.rows), ldy,
                  static_cast<int>((W.rows + per - 1) / per)};
}

void matmul(const DevMatrix& W, const Acts& a, int T, float* y, int ldy, const float* bias, Epi epi, cudaStream_t st) {
    MatSegs segs{};
    segs.s[0] = segment(W, nullptr, T, y, ldy, bias);
    segs.n = 1;
    dispatch(W, segs, false, a, T, epi, st);
}

static bool same_layout(const DevMatrix& a, const DevMatrix& b) {
    return a.type == b.type && a.cols == b.cols && a.row_bytes == b.row_bytes && a.lpr == b.lpr &&
           act_block(a.type) != 0;
}

bool swiglu_fusable(const DevMatrix& gate, const DevMatrix& up) {
    return same_layout(gate, up) && gate.rows == up.rows;
}

void matmul_swiglu(const DevMatrix& gate, const DevMatrix& up, const Acts& a, int T, float* y, int ldy,
                   cudaStream_t st) {
    if (!swiglu_fusable(gate, up)) throw CudaError("matmul_swiglu: gate and up differ in type or shape");
    MatSegs segs{};
    segs.s[0] = segment(gate, &up, T, y, ldy, nullptr);
    segs.n = 1;
    dispatch(gate, segs, true, a, T, Epi::SwiGLU, st);
}

bool group_fusable(const DevMatrix& a, const DevMatrix& b, const DevMatrix& c) {
    return same_layout(a, b) && same_layout(a, c);
}

void matmul3(const DevMatrix* const W[3], const Acts& a, int T, float* const y[3], const int ldy[3],
             const float* const bias[3], cudaStream_t st) {
    if (!group_fusable(*W[0], *W[1], *W[2])) throw CudaError("matmul3: the matrices differ in type or row layout");
    MatSegs segs{};
    for (int i = 0; i < 3; i++) segs.s[i] = segment(*W[i], nullptr, T, y[i], ldy[i], bias[i]);
    segs.n = 3;
    dispatch(*W[0], segs, false, a, T, Epi::Store, st);
}

}  // namespace cuda
}  // namespace lg

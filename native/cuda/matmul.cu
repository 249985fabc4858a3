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

__device__ __forceinline__ float silu_mul(float g, float u) { return g / (1.0f + expf(-g)) * u; }

__device__ __forceinline__ void epilogue(float* y, int64_t idx, float acc, const float* bias, int row, int epi) {
    if (epi == static_cast<int>(Epi::Store)) y[idx] = bias ? acc + bias[row] : acc;
    else if (epi == static_cast<int>(Epi::Add)) y[idx] = y[idx] + acc;
    else y[idx] = silu_mul(acc, y[idx]);
}

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

// Up to three matrices of one type and row length in one launch (q, k and v read the same
// activations): consecutive ranges of blocks, each with its own weights, output and bias.
struct MatSeg {
    const uint8_t* W;
    const uint8_t* W2;  // DUAL only: the up projection beside the gate W
    float* y;
    const float* bias;
    int n_rows, ldy, blocks;
};
constexpr int MAX_SEGS = 3;
struct MatSegs {
    MatSeg s[MAX_SEGS];
    int n;
};

// The segment of this block and the block's index inside it (selects, no local-memory copy).
__device__ __forceinline__ MatSeg find_seg(const MatSegs& g, int* b) {
    int blk = blockIdx.x;
    MatSeg S = g.s[0];
    if (g.n > 1 && blk >= g.s[0].blocks) {
        blk -= g.s[0].blocks;
        S = g.s[1];
        if (g.n > 2 && blk >= g.s[1].blocks) {
            blk -= g.s[1].blocks;
            S = g.s[2];
        }
    }
    *b = blk;
    return S;
}

// Warp 0 of a block asks L2 for the weight rows [row0, row0 + n) of its segment (and of W2 when
// dual) before the block waits for the previous kernel.
__device__ __forceinline__ void prefetch_block_rows(const MatSeg& S, bool dual, int row0, int n, int64_t row_bytes) {
    if (row0 >= S.n_rows) return;
    const int rows = min(n, S.n_rows - row0);
    prefetch_l2_warp(S.W + static_cast<int64_t>(row0) * row_bytes, rows * row_bytes, threadIdx.x % WARP);
    if (dual) prefetch_l2_warp(S.W2 + static_cast<int64_t>(row0) * row_bytes, rows * row_bytes, threadIdx.x % WARP);
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

// ---------------------------------------------------------------------------- tensor cores (T > 1)

// int8 mma (sm_80+): a warp multiplies 16 weight rows by one 32-element unit of 8 activation records
// (m16n8k32; Q6_K takes its two 16-element halves apart, m16n8k16, since they have their own scales).
// Fragments (PTX ISA, "mma.m16n8k32", .s8): lane = 4 g + k holds of A words k and k + 4 of rows g and
// g + 8, of B words k and k + 4 of column g, of C rows g and g + 8 at columns 2k and 2k + 1.
constexpr int MMA_WARPS = 4;
constexpr int MMA_ROWS = 16 * MMA_WARPS;  // weight rows per block

__device__ __forceinline__ void mma_k32(int (&c)[4], int a0, int a1, int a2, int a3, int b0, int b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
}
__device__ __forceinline__ void mma_k16(int (&c)[4], int a0, int a1, int b0) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a0), "r"(a1), "r"(b0));
#endif
}

// One weight unit of this lane's two rows (g, g + 8): scales and its A words.
template <int TYPE>
struct RowPairUnit {
    UnitScale s[2];
    int lo[2], hi[2];
    __device__ __forceinline__ void load(const uint8_t* wA, const uint8_t* wB, int u, int k) {
        s[0] = unit_scale<TYPE>(wA, u);
        s[1] = unit_scale<TYPE>(wB, u);
        unit_words2<TYPE>(wA, u, k, lo[0], hi[0]);
        unit_words2<TYPE>(wB, u, k, lo[1], hi[1]);
    }
    // The integer dot sc0 * dot(0..15) + sc1 * dot(16..31) of C element i (row i / 2) for B words b0, b1:
    // exactly the dp4a kernel's w.s.sc0 * lo + w.s.sc1 * hi.
    __device__ __forceinline__ void dots(int b0, int b1, int (&iv)[4]) const {
        int c[4] = {0, 0, 0, 0};
        if constexpr (TYPE == W_Q6_K) {
            int h[4] = {0, 0, 0, 0};
            mma_k16(c, lo[0], lo[1], b0);
            mma_k16(h, hi[0], hi[1], b1);
#pragma unroll
            for (int i = 0; i < 4; i++) iv[i] = s[i / 2].sc0 * c[i] + s[i / 2].sc1 * h[i];
        } else {  // sc0 == sc1: sc * lo + sc * hi == sc * (lo + hi) in integers
            mma_k32(c, lo[0], lo[1], hi[0], hi[1], b0, b1);
#pragma unroll
            for (int i = 0; i < 4; i++) iv[i] = s[i / 2].sc0 * c[i];
        }
    }
};

// Weight-stationary over tensor cores: block = MMA_ROWS rows x TILES * 8 activation records (grid.y
// over the tokens). Row r, token t: for slot l = 0..L-1 a chain over units l, l + L, ... from zero,
// each unit's records in order (unit_dot's fmaf steps), the slots then added in order from zero:
// what mm_q_kernel's lanes and reduce_rows compute, so batched and one-token products agree bit
// for bit. DUAL as in mm_q_kernel.
template <int TYPE, int PAIR, bool DUAL, int TILES>
__global__ void __launch_bounds__(MMA_WARPS * WARP)
mm_mma_kernel(MatSegs segs, int64_t row_bytes, int K, int L, Acts a, int T, int epi, int prefetch) {
    constexpr int TPT = 8 / PAIR;   // tokens per 8-column tile
    constexpr int NACC = 4 / PAIR;  // accumulators per tile and lane: rows x tokens of its C elements
    constexpr bool MINS = TYPE == W_Q4_K || TYPE == W_Q4_1;
    int blk;
    const MatSeg S = find_seg(segs, &blk);
    const int warp = threadIdx.x / WARP, lane = threadIdx.x % WARP, g = lane >> 2, k = lane & 3;
    if (prefetch && blockIdx.y == 0 && warp == 0) prefetch_block_rows(S, DUAL, blk * MMA_ROWS, MMA_ROWS, row_bytes);
    pdl_wait();
    pdl_trigger();
    const int rbase = blk * MMA_ROWS + warp * 16;
    if (rbase >= S.n_rows) return;  // the whole warp
    const int rA = rbase + g, rB = rbase + g + 8;
    const uint8_t* wA = S.W + static_cast<int64_t>(rA < S.n_rows ? rA : rbase) * row_bytes;
    const uint8_t* wB = S.W + static_cast<int64_t>(rB < S.n_rows ? rB : rbase) * row_bytes;
    const uint8_t* w2A = DUAL ? S.W2 + (wA - S.W) : nullptr;
    const uint8_t* w2B = DUAL ? S.W2 + (wB - S.W) : nullptr;
    const int units = K / UNIT, ublk = a.ablk / UNIT, kd = K / a.ablk;
    const int tb = blockIdx.y * TILES * TPT;
    // B column g of tile j reads activation record bri[j]; C columns 2k + c are records cri[j][c].
    // Columns past T read the last token's records instead: a column of C depends only on its own
    // column of B, and those are never stored. No lane branches around the mma (.aligned).
    int bri[TILES], cri[TILES][2];
#pragma unroll
    for (int j = 0; j < TILES; j++) {
        const int tok = min(tb + j * TPT + g / PAIR, T - 1);
        bri[j] = tok * PAIR + g % PAIR;
#pragma unroll
        for (int c = 0; c < 2; c++) {
            const int col = 2 * k + c, ct = min(tb + j * TPT + col / PAIR, T - 1);
            cri[j][c] = ct * PAIR + col % PAIR;
        }
    }
    float run[TILES][NACC], run2[TILES][NACC];
#pragma unroll
    for (int j = 0; j < TILES; j++)
#pragma unroll
        for (int i = 0; i < NACC; i++) run[j][i] = run2[j][i] = 0.0f;

    for (int l = 0; l < L; l++) {
        float acc[TILES][NACC], acc2[TILES][NACC];
#pragma unroll
        for (int j = 0; j < TILES; j++)
#pragma unroll
            for (int i = 0; i < NACC; i++) acc[j][i] = acc2[j][i] = 0.0f;
        for (int u = l; u < units; u += L) {
            RowPairUnit<TYPE> W, W2;
            W.load(wA, wB, u, k);
            if constexpr (DUAL) W2.load(w2A, w2B, u, k);
#pragma unroll
            for (int j = 0; j < TILES; j++) {
                const int8_t* ap = a.q + static_cast<int64_t>(bri[j]) * K + u * UNIT + 4 * k;
                const int b0 = *reinterpret_cast<const int*>(ap), b1 = *reinterpret_cast<const int*>(ap + 16);
                float dx[2];
                int sx[2];
#pragma unroll
                for (int c = 0; c < 2; c++) {
                    dx[c] = a.d[static_cast<int64_t>(cri[j][c]) * kd + u / ublk];
                    sx[c] = MINS ? a.s[static_cast<int64_t>(cri[j][c]) * units + u] : 0;
                }
                int iv[4], iv2[4];
                W.dots(b0, b1, iv);
                if constexpr (DUAL) W2.dots(b0, b1, iv2);
#pragma unroll
                for (int i = 0; i < 4; i++) {  // PAIR 2: row i/2, records 0 then 1 of one token; PAIR 1: 4 pairs
                    const int r = i / 2, c = i % 2, ai = PAIR == 2 ? r : i;
                    const UnitScale& sc = W.s[r];
                    acc[j][ai] = fmaf(sc.f1 * dx[c], static_cast<float>(iv[i]), acc[j][ai]);
                    if constexpr (MINS) acc[j][ai] = fmaf(sc.f2 * dx[c], static_cast<float>(sc.mn * sx[c]), acc[j][ai]);
                    if constexpr (DUAL) {
                        const UnitScale& s2 = W2.s[r];
                        acc2[j][ai] = fmaf(s2.f1 * dx[c], static_cast<float>(iv2[i]), acc2[j][ai]);
                        if constexpr (MINS)
                            acc2[j][ai] = fmaf(s2.f2 * dx[c], static_cast<float>(s2.mn * sx[c]), acc2[j][ai]);
                    }
                }
            }
        }
#pragma unroll
        for (int j = 0; j < TILES; j++)
#pragma unroll
            for (int i = 0; i < NACC; i++) {
                run[j][i] += acc[j][i];
                if constexpr (DUAL) run2[j][i] += acc2[j][i];
            }
    }
#pragma unroll
    for (int j = 0; j < TILES; j++)
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int r = i / 2, c = i % 2, ai = PAIR == 2 ? r : i;
            if (PAIR == 2 && c == 1) continue;  // both records of the token went into one accumulator
            const int row = r ? rB : rA, tok = tb + j * TPT + (2 * k + c) / PAIR;
            if (row >= S.n_rows || tok >= T) continue;
            const int64_t idx = static_cast<int64_t>(tok) * S.ldy + row;
            if constexpr (DUAL) S.y[idx] = silu_mul(run[j][ai], run2[j][ai]);
            else epilogue(S.y, idx, run[j][ai], S.bias, row, epi);
        }
}

// ---------------------------------------------------------------------------- dispatch

// The kernel a product runs on: tensor cores for quantized weights over T > 1 tokens (unless
// launch_opts().mma is off), else dp4a / fmaf lanes (mm_q_kernel, mm_f_kernel).
static bool use_mma(const DevMatrix& W, int T) { return T > 1 && launch_opts().mma && act_block(W.type) != 0; }

static int rows_per_block(const DevMatrix& W, int T) { return use_mma(W, T) ? MMA_ROWS : MATMUL_THREADS / W.lpr; }

template <int TYPE, int NT, int PAIR, bool DUAL>
static void launch_typed(const DevMatrix& W, const MatSegs& segs, const Acts& a, int T, Epi epi, cudaStream_t st) {
    int grid = 0;
    for (int i = 0; i < segs.n; i++) grid += segs.s[i].blocks;
    const int K = static_cast<int>(W.cols), pf = launch_opts().pdl ? 1 : 0;
    if constexpr (TYPE == W_F32 || TYPE == W_F16) {
        const MatSeg& S = segs.s[0];
        launch("mm_f_kernel", mm_f_kernel<TYPE, NT>, dim3(grid), dim3(MATMUL_THREADS), 0, st, S.W, W.row_bytes, S.n_rows,
               K, W.lpr, a, T, S.y, S.ldy, S.bias, static_cast<int>(epi));
    } else if (use_mma(W, T)) {
        const int tiles = T > 32 ? 4 : 2, per = tiles * 8 / PAIR;
        const dim3 g(grid, (T + per - 1) / per);
        if (tiles == 4)
            launch("mm_mma_kernel", mm_mma_kernel<TYPE, PAIR, DUAL, 4>, g, dim3(MMA_WARPS * WARP), 0, st, segs,
                   W.row_bytes, K, W.lpr, a, T, static_cast<int>(epi), pf);
        else
            launch("mm_mma_kernel", mm_mma_kernel<TYPE, PAIR, DUAL, 2>, g, dim3(MMA_WARPS * WARP), 0, st, segs,
                   W.row_bytes, K, W.lpr, a, T, static_cast<int>(epi), pf);
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

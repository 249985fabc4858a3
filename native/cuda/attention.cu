// Attention kernels: K/V store (keys rotated once), per-chunk partial softmax, and the combine
// that merges chunks in a fixed order (so results do not depend on T). See attention.cuh.
#include "attention.cuh"

#include <cmath>

namespace lg {
namespace cuda {

// Rotate pair j of a head vector by (c, sn) (as rope() in native/forward.cpp).
__device__ __forceinline__ void rope_pair(bool neox, int hd, int j, float c, float sn, const float* in, float* out) {
    const int half = hd / 2;
    const int ia = neox ? j : 2 * j, ib = neox ? j + half : 2 * j + 1;
    const float a = in[ia], b = in[ib];
    out[ia] = a * c - b * sn;
    out[ib] = a * sn + b * c;
}

// cos/sin of rotation index r at frequency theta: the angle in double, rounded to float once
// (fill_rope_row in native/ops.cpp).
__device__ __forceinline__ void rot_cs(int64_t r, double theta, float* c, float* sn) {
    double sd, cd;
    sincos(static_cast<double>(r) * theta, &sd, &cd);
    *c = static_cast<float>(cd);
    *sn = static_cast<float>(sd);
}

__global__ void kv_store_kernel(AttnShape s, float* __restrict__ k_cache, __half* __restrict__ v_cache,
                                const float* __restrict__ k_new, const float* __restrict__ v_new,
                                const double* __restrict__ theta, const int32_t* __restrict__ chunk_slot,
                                const ChunkMeta* __restrict__ meta) {
    pdl_wait();
    pdl_trigger();
    const int t = blockIdx.x, h = blockIdx.y, hd = s.head_dim;
    if (t >= meta->T) return;
    const int kv_dim = s.n_head_kv * hd;
    const int64_t row = static_cast<int64_t>(h) * s.capacity + chunk_slot[t];
    const int64_t r = meta->rot0 + t;
    const float* kn = k_new + static_cast<int64_t>(t) * kv_dim + h * hd;
    for (int j = threadIdx.x; j < hd / 2; j += blockDim.x) {
        float c, sn;
        rot_cs(r, theta[j], &c, &sn);
        rope_pair(s.neox, hd, j, c, sn, kn, k_cache + row * hd);
    }
    for (int d = threadIdx.x; d < hd; d += blockDim.x)
        v_cache[row * hd + d] = __float2half_rn(v_new[static_cast<int64_t>(t) * kv_dim + h * hd + d]);
}

void kv_store(const AttnShape& s, float* k_cache, __half* v_cache, const float* k_new, const float* v_new,
              const double* theta, const int32_t* chunk_slot, const ChunkMeta* meta, int T, cudaStream_t st) {
    dim3 grid(T, s.n_head_kv);
    launch("kv_store_kernel", kv_store_kernel, grid, dim3(s.head_dim < 128 ? s.head_dim : 128), 0, st, s, k_cache,
           v_cache, k_new, v_new, theta, chunk_slot, meta);
}

// Shared memory of the partial kernel, in floats: queries [2][G][hd] (by rotation index, by
// position), keys transposed [hd][ATT_CHUNK + 1], values [ATT_CHUNK][hd], weights [G][ATT_CHUNK],
// then ATT_CHUNK slots (ints).
static size_t smem_floats(const AttnShape& s) {
    const size_t G = s.n_head / s.n_head_kv, hd = s.head_dim;
    return 2 * G * hd + hd * (ATT_CHUNK + 1) + ATT_CHUNK * hd + G * ATT_CHUNK + ATT_CHUNK;
}

size_t attention_smem_bytes(const AttnShape& s) { return sizeof(float) * smem_floats(s); }

// Block = (chunk c of 32 positions, KV head, token t). Loads (coalesced, all in flight): the
// chunk's keys (float4) and values (8 halves), then one lane per position scores each of the G
// query heads, then every thread forms outputs (g, d) from the weights in a fixed order.
__global__ void __launch_bounds__(ATT_THREADS)
attn_partial_kernel(AttnShape s, const float* __restrict__ k_cache, const __half* __restrict__ v_cache,
                    const float* __restrict__ q, const int32_t* __restrict__ pos_slot,
                    const double* __restrict__ theta, const float* __restrict__ rope_cos,
                    const float* __restrict__ rope_sin, const ChunkMeta* __restrict__ meta,
                    float* __restrict__ part_acc, float* __restrict__ part_ml) {
    LG_DYNAMIC_SHARED(float, smem);
    pdl_wait();
    pdl_trigger();
    const int c = blockIdx.x, kvh = blockIdx.y, t = blockIdx.z;
    if (t >= meta->T) return;
    const int pos = meta->pos0 + t, n = pos + 1;
    const int p0 = c * ATT_CHUNK;
    if (p0 >= n) return;  // the combine never reads this chunk
    const int64_t rq = meta->rot0 + t;
    const int n_sink = meta->n_sink_pos;
    const int hd = s.head_dim, half = hd / 2, G = s.n_head / s.n_head_kv;
    constexpr int KS = ATT_CHUNK + 1;  // padded row of the transposed keys
    float* sq = smem;                  // [2][G][hd]
    float* skT = sq + 2 * G * hd;      // [hd][KS]
    float* sv = skT + hd * KS;         // [ATT_CHUNK][hd]
    float* se = sv + ATT_CHUNK * hd;   // [G][ATT_CHUNK]
    int* sslot = reinterpret_cast<int*>(se + G * ATT_CHUNK);
    const int E = s.n_head * hd;

    if (threadIdx.x < ATT_CHUNK) {
        const int p = p0 + threadIdx.x;
        sslot[threadIdx.x] = p < n ? pos_slot[p] : -1;
    }
    for (int i = threadIdx.x; i < G * half; i += blockDim.x) {
        const int g = i / half, j = i % half;
        const float* qh = q + static_cast<int64_t>(t) * E + (kvh * G + g) * hd;
        float cr, sr;
        rot_cs(rq, theta[j], &cr, &sr);
        rope_pair(s.neox, hd, j, cr, sr, qh, sq + g * hd);
        rope_pair(s.neox, hd, j, rope_cos[static_cast<int64_t>(pos) * half + j],
                  rope_sin[static_cast<int64_t>(pos) * half + j], qh, sq + (G + g) * hd);
    }
    __syncthreads();
    const float* kc = k_cache + static_cast<int64_t>(kvh) * s.capacity * hd;
    const __half* vc = v_cache + static_cast<int64_t>(kvh) * s.capacity * hd;
    const int k4 = hd / 4;
#pragma unroll 4
    for (int i = threadIdx.x; i < ATT_CHUNK * k4; i += blockDim.x) {
        const int kk = i / k4, d = 4 * (i % k4), slot = sslot[kk];
        const float4 v = slot >= 0 ? *reinterpret_cast<const float4*>(kc + static_cast<int64_t>(slot) * hd + d)
                                   : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        skT[(d + 0) * KS + kk] = v.x;
        skT[(d + 1) * KS + kk] = v.y;
        skT[(d + 2) * KS + kk] = v.z;
        skT[(d + 3) * KS + kk] = v.w;
    }
    const int v8 = hd / 8;
#pragma unroll 4
    for (int i = threadIdx.x; i < ATT_CHUNK * v8; i += blockDim.x) {
        const int kk = i / v8, d = 8 * (i % v8), slot = sslot[kk];
        float* dst = sv + kk * hd + d;
        if (slot >= 0) {
            const uint4 raw = *reinterpret_cast<const uint4*>(vc + static_cast<int64_t>(slot) * hd + d);
            const __half2* h2 = reinterpret_cast<const __half2*>(&raw);
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const float2 f = __half22float2(h2[e]);
                dst[2 * e] = f.x;
                dst[2 * e + 1] = f.y;
            }
        } else {
#pragma unroll
            for (int e = 0; e < 8; e++) dst[e] = 0.0f;
        }
    }
    __syncthreads();

    const int warp = threadIdx.x / WARP, lane = threadIdx.x % WARP, n_warps = blockDim.x / WARP;
    const float scale = 1.0f / sqrtf(static_cast<float>(hd));
    const int p = p0 + lane;
    const bool valid = p < n;
    for (int g = warp; g < G; g += n_warps) {
        const float* qg = sq + (p < n_sink ? G + g : g) * hd;
        float sc = 0.0f;
        for (int d = 0; d < hd; d++) sc = fmaf(qg[d], skT[d * KS + lane], sc);
        sc = valid ? sc * scale : -INFINITY;
        float m = sc;
        for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
        const float e = valid ? expf(sc - m) : 0.0f;
        float l = e;
        for (int off = 16; off > 0; off >>= 1) l += __shfl_xor_sync(0xffffffffu, l, off);
        se[g * ATT_CHUNK + lane] = e;
        if (lane == 0) {
            const int64_t pidx = (static_cast<int64_t>(t) * s.n_head + kvh * G + g) * s.max_chunks + c;
            part_ml[pidx * 2] = m;
            part_ml[pidx * 2 + 1] = l;
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < G * hd; i += blockDim.x) {
        const int g = i / hd, d = i % hd;
        const float* eg = se + g * ATT_CHUNK;
        float acc = 0.0f;
#pragma unroll 8
        for (int k = 0; k < ATT_CHUNK; k++) acc = fmaf(eg[k], sv[k * hd + d], acc);
        const int64_t pidx = (static_cast<int64_t>(t) * s.n_head + kvh * G + g) * s.max_chunks + c;
        part_acc[pidx * hd + d] = acc;
    }
}

constexpr int COMBINE_THREADS = 128;

// Block = (head, token). The chunks' maxima and weights go through shared memory; every sum runs
// over chunks in index order.
__global__ void __launch_bounds__(COMBINE_THREADS)
attn_combine_kernel(AttnShape s, const ChunkMeta* __restrict__ meta, const float* __restrict__ part_acc,
                    const float* __restrict__ part_ml, float* __restrict__ out) {
    LG_DYNAMIC_SHARED(float, cs);  // [max_chunks] weights, then [max_chunks] sums
    pdl_wait();
    pdl_trigger();
    const int h = blockIdx.x, t = blockIdx.y, hd = s.head_dim;
    if (t >= meta->T) return;
    const int n = meta->pos0 + t + 1, nc = (n + ATT_CHUNK - 1) / ATT_CHUNK;
    const int64_t base = (static_cast<int64_t>(t) * s.n_head + h) * s.max_chunks;
    float* w = cs;
    float* l = cs + s.max_chunks;
    for (int c = threadIdx.x; c < nc; c += blockDim.x) {
        w[c] = part_ml[(base + c) * 2];
        l[c] = part_ml[(base + c) * 2 + 1];
    }
    __syncthreads();
    float M = -INFINITY;
    for (int c = 0; c < nc; c++) M = fmaxf(M, w[c]);
    __syncthreads();  // every thread has read the maxima
    for (int c = threadIdx.x; c < nc; c += blockDim.x) w[c] = expf(w[c] - M);
    __syncthreads();
    float den = 0.0f;
    for (int c = 0; c < nc; c++) den = fmaf(w[c], l[c], den);
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        float num = 0.0f;
#pragma unroll 8
        for (int c = 0; c < nc; c++) num = fmaf(w[c], part_acc[(base + c) * hd + d], num);
        out[static_cast<int64_t>(t) * s.n_head * hd + h * hd + d] = num / den;
    }
}

void attention(const AttnShape& s, const float* k_cache, const __half* v_cache, const float* q,
               const int32_t* pos_slot, const double* theta, const float* rope_cos, const float* rope_sin,
               const ChunkMeta* meta, int T, int n_chunks, float* part_acc, float* part_ml, float* out,
               cudaStream_t st) {
    dim3 grid(n_chunks, s.n_head_kv, T);
    launch("attn_partial_kernel", attn_partial_kernel, grid, dim3(ATT_THREADS), attention_smem_bytes(s), st, s, k_cache,
           v_cache, q, pos_slot, theta, rope_cos, rope_sin, meta, part_acc, part_ml);
    dim3 cgrid(s.n_head, T);
    launch("attn_combine_kernel", attn_combine_kernel, cgrid, dim3(COMBINE_THREADS), 2 * sizeof(float) * s.max_chunks,
           st, s, meta, part_acc, part_ml, out);
}

}  // namespace cuda
}  // namespace lg

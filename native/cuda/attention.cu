// Attention kernels: K/V store, per-chunk partial softmax (one cache position per lane), and
// the combine that merges chunks in a fixed order (so results do not depend on T).
// Knows nothing about weights; see attention.cuh.
#include "attention.cuh"

#include <cmath>

namespace lg {
namespace cuda {

__global__ void kv_store_kernel(AttnShape s, __half* __restrict__ cache, const float* __restrict__ k_new,
                                const float* __restrict__ v_new, const int32_t* __restrict__ chunk_slot,
                                const ChunkMeta* __restrict__ meta) {
    const int t = blockIdx.x, h = blockIdx.y, hd = s.head_dim;
    if (t >= meta->T) return;
    const int kv_dim = s.n_head_kv * hd;
    const int64_t slot = chunk_slot[t];
    __half* kc = cache + static_cast<int64_t>(h) * 2 * s.capacity * hd;
    __half* vc = kc + static_cast<int64_t>(s.capacity) * hd;
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        kc[slot * hd + d] = __float2half_rn(k_new[static_cast<int64_t>(t) * kv_dim + h * hd + d]);
        vc[slot * hd + d] = __float2half_rn(v_new[static_cast<int64_t>(t) * kv_dim + h * hd + d]);
    }
}

void kv_store(const AttnShape& s, __half* layer_cache, const float* k_new, const float* v_new,
              const int32_t* chunk_slot, const ChunkMeta* meta, int T, cudaStream_t st) {
    dim3 grid(T, s.n_head_kv);
    kv_store_kernel<<<grid, s.head_dim < 128 ? s.head_dim : 128, 0, st>>>(s, layer_cache, k_new, v_new, chunk_slot, meta);
    LG_CUDA_LAUNCHED("kv_store_kernel");
}

// Rotate pair j of a head vector to position p (as rope() in native/forward.cpp).
__device__ __forceinline__ void rope_pair(bool neox, int hd, int j, float c, float sn, const float* in, float* out) {
    const int half = hd / 2;
    const int ia = neox ? j : 2 * j, ib = neox ? j + half : 2 * j + 1;
    const float a = in[ia], b = in[ib];
    out[ia] = a * c - b * sn;
    out[ib] = a * sn + b * c;
}

// The same for a cached key: fp16 without bias, plus the bias (nullable) in fp32.
__device__ __forceinline__ void rope_pair_h(bool neox, int hd, int j, float c, float sn, const __half* in,
                                            const float* bias, float* out) {
    const int half = hd / 2;
    const int ia = neox ? j : 2 * j, ib = neox ? j + half : 2 * j + 1;
    float a = __half2float(in[ia]), b = __half2float(in[ib]);
    if (bias) {
        a += bias[ia];
        b += bias[ib];
    }
    out[ia] = a * c - b * sn;
    out[ib] = a * sn + b * c;
}

// Block = (chunk c of 32 positions, KV head, token t). Shared: rotated queries of the G heads
// sharing this KV head [G][hd], rotated keys [32][hd+1] (padded: lanes read distinct rows),
// values [32][hd].
__global__ void __launch_bounds__(ATT_THREADS)
attn_partial_kernel(AttnShape s, const __half* __restrict__ cache, const float* __restrict__ k_bias,
                    const float* __restrict__ q,
                    const int32_t* __restrict__ pos_slot, const float* __restrict__ rope_cos,
                    const float* __restrict__ rope_sin, const ChunkMeta* __restrict__ meta,
                    float* __restrict__ part_acc, float* __restrict__ part_ml) {
    extern __shared__ float smem[];
    const int c = blockIdx.x, kvh = blockIdx.y, t = blockIdx.z;
    if (t >= meta->T) return;
    const int pos = meta->pos0 + t, n = pos + 1;
    if (c * ATT_CHUNK >= n) return;  // the combine never reads this chunk
    const int hd = s.head_dim, half = hd / 2, G = s.n_head / s.n_head_kv;
    float* sq = smem;                      // [G][hd]
    float* sk = sq + G * hd;               // [32][hd + 1]
    float* sv = sk + ATT_CHUNK * (hd + 1); // [32][hd]
    const int E = s.n_head * hd;

    for (int i = threadIdx.x; i < G * half; i += blockDim.x) {
        const int g = i / half, j = i % half, h = kvh * G + g;
        rope_pair(s.neox, hd, j, rope_cos[static_cast<int64_t>(pos) * half + j],
                  rope_sin[static_cast<int64_t>(pos) * half + j], q + static_cast<int64_t>(t) * E + h * hd, sq + g * hd);
    }
    const __half* kc = cache + static_cast<int64_t>(kvh) * 2 * s.capacity * hd;
    const __half* vc = kc + static_cast<int64_t>(s.capacity) * hd;
    const float* kb = k_bias ? k_bias + kvh * hd : nullptr;
    for (int i = threadIdx.x; i < ATT_CHUNK * half; i += blockDim.x) {
        const int kk = i / half, j = i % half, p = c * ATT_CHUNK + kk;
        float* dst = sk + kk * (hd + 1);
        if (p < n) {
            const int64_t slot = pos_slot[p];
            rope_pair_h(s.neox, hd, j, rope_cos[static_cast<int64_t>(p) * half + j],
                        rope_sin[static_cast<int64_t>(p) * half + j], kc + slot * hd, kb, dst);
        } else {
            const int ia = s.neox ? j : 2 * j, ib = s.neox ? j + half : 2 * j + 1;
            dst[ia] = 0.0f;
            dst[ib] = 0.0f;
        }
    }
    for (int i = threadIdx.x; i < ATT_CHUNK * hd; i += blockDim.x) {
        const int kk = i / hd, d = i % hd, p = c * ATT_CHUNK + kk;
        sv[kk * hd + d] = p < n ? __half2float(vc[static_cast<int64_t>(pos_slot[p]) * hd + d]) : 0.0f;
    }
    __syncthreads();

    const int warp = threadIdx.x / WARP, lane = threadIdx.x % WARP, n_warps = blockDim.x / WARP;
    const float scale = 1.0f / sqrtf(static_cast<float>(hd));
    const int p = c * ATT_CHUNK + lane;
    const bool valid = p < n;
    for (int g = warp; g < G; g += n_warps) {
        const float* qg = sq + g * hd;
        const float* kr = sk + lane * (hd + 1);
        float sc = 0.0f;
        for (int d = 0; d < hd; d++) sc = fmaf(qg[d], kr[d], sc);
        sc = valid ? sc * scale : -INFINITY;
        float m = sc;
        for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
        const float e = valid ? expf(sc - m) : 0.0f;
        float l = e;
        for (int off = 16; off > 0; off >>= 1) l += __shfl_xor_sync(0xffffffffu, l, off);
        const int h = kvh * G + g;
        const int64_t pidx = (static_cast<int64_t>(t) * s.n_head + h) * s.max_chunks + c;
        for (int d0 = 0; d0 < hd; d0 += WARP) {
            const int d = d0 + lane;
            float acc = 0.0f;
            for (int k = 0; k < ATT_CHUNK; k++) {
                const float ek = __shfl_sync(0xffffffffu, e, k);
                if (d < hd) acc = fmaf(ek, sv[k * hd + d], acc);
            }
            if (d < hd) part_acc[pidx * hd + d] = acc;
        }
        if (lane == 0) {
            part_ml[pidx * 2] = m;
            part_ml[pidx * 2 + 1] = l;
        }
    }
}

// Block = (head, token); thread = dimension. Chunks merged in index order.
__global__ void attn_combine_kernel(AttnShape s, const ChunkMeta* __restrict__ meta, const float* __restrict__ part_acc,
                                    const float* __restrict__ part_ml, float* __restrict__ out) {
    const int h = blockIdx.x, t = blockIdx.y, hd = s.head_dim;
    if (t >= meta->T) return;
    const int n = meta->pos0 + t + 1, nc = (n + ATT_CHUNK - 1) / ATT_CHUNK;
    const int64_t base = (static_cast<int64_t>(t) * s.n_head + h) * s.max_chunks;
    float M = -INFINITY;
    for (int c = 0; c < nc; c++) M = fmaxf(M, part_ml[(base + c) * 2]);
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        float num = 0.0f, den = 0.0f;
        for (int c = 0; c < nc; c++) {
            const float w = expf(part_ml[(base + c) * 2] - M);
            den = fmaf(w, part_ml[(base + c) * 2 + 1], den);
            num = fmaf(w, part_acc[(base + c) * hd + d], num);
        }
        out[static_cast<int64_t>(t) * s.n_head * hd + h * hd + d] = num / den;
    }
}

void attention(const AttnShape& s, const __half* layer_cache, const float* k_bias, const float* q,
               const int32_t* pos_slot,
               const float* rope_cos, const float* rope_sin, const ChunkMeta* meta, int T, int n_chunks,
               float* part_acc, float* part_ml, float* out, cudaStream_t st) {
    const int G = s.n_head / s.n_head_kv, hd = s.head_dim;
    const size_t smem = sizeof(float) * (static_cast<size_t>(G) * hd + ATT_CHUNK * (hd + 1) + ATT_CHUNK * hd);
    dim3 grid(n_chunks, s.n_head_kv, T);
    attn_partial_kernel<<<grid, ATT_THREADS, smem, st>>>(s, layer_cache, k_bias, q, pos_slot, rope_cos, rope_sin, meta,
                                                         part_acc, part_ml);
    LG_CUDA_LAUNCHED("attn_partial_kernel");
    dim3 cgrid(s.n_head, T);
    attn_combine_kernel<<<cgrid, hd < 128 ? hd : 128, 0, st>>>(s, meta, part_acc, part_ml, out);
    LG_CUDA_LAUNCHED("attn_combine_kernel");
}

}  // namespace cuda
}  // namespace lg

// Embedding, argmax/sampling and the greedy-step kernel (see ops.cuh).
// Knows nothing about layers or attention.
#include "ops.cuh"
#include "qdot.cuh"

#include <cfloat>

namespace lg {
namespace cuda {

template <int TYPE>
__global__ void embed_kernel(const uint8_t* __restrict__ table, int64_t row_bytes, int E,
                             const int32_t* __restrict__ tokens, const ChunkMeta* __restrict__ meta,
                             float* __restrict__ x) {
    pdl_wait();
    pdl_trigger();
    const int t = blockIdx.x;
    if (t >= meta->T) return;
    const uint8_t* row = table + static_cast<int64_t>(tokens[t]) * row_bytes;
    for (int e = threadIdx.x; e < E; e += blockDim.x) x[static_cast<int64_t>(t) * E + e] = dequant_elem<TYPE>(row, e);
}

void embed(int type, const uint8_t* table, int64_t row_bytes, int E, const int32_t* tokens, const ChunkMeta* meta,
           int T, float* x, cudaStream_t st) {
    const auto go = [&](auto kernel) {
        launch("embed_kernel", kernel, dim3(T), dim3(256), 0, st, table, row_bytes, E, tokens, meta, x);
    };
    switch (type) {
        case W_F32: return go(embed_kernel<W_F32>);
        case W_F16: return go(embed_kernel<W_F16>);
        case W_Q4_0: return go(embed_kernel<W_Q4_0>);
        case W_Q4_1: return go(embed_kernel<W_Q4_1>);
        case W_Q5_0: return go(embed_kernel<W_Q5_0>);
        case W_Q8_0: return go(embed_kernel<W_Q8_0>);
        case W_Q4_K: return go(embed_kernel<W_Q4_K>);
        case W_Q6_K: return go(embed_kernel<W_Q6_K>);
        default: throw CudaError("embed: unsupported embedding type id " + std::to_string(type));
    }
}

constexpr int ARGMAX_THREADS = 256;

// splitmix64: a counter-based generator, so sampling needs no per-thread state.
__device__ __forceinline__ uint64_t mix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// (best, bi) := the larger of it and (v, i); the lower index on ties.
__device__ __forceinline__ void arg_better(float v, int i, float& best, int& bi) {
    if (v > best || (v == best && i < bi)) {
        best = v;
        bi = i;
    }
}

// The block's (max, lowest index) into (sv[0], si[0]).
__device__ __forceinline__ void arg_block(float best, int bi, float* sv, int* si) {
    for (int off = 16; off > 0; off >>= 1)
        arg_better(__shfl_xor_sync(0xffffffffu, best, off), __shfl_xor_sync(0xffffffffu, bi, off), best, bi);
    if (threadIdx.x % WARP == 0) {
        sv[threadIdx.x / WARP] = best;
        si[threadIdx.x / WARP] = bi;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < static_cast<int>(blockDim.x) / WARP; w++) arg_better(sv[w], si[w], best, bi);
        sv[0] = best;
        si[0] = bi;
    }
}

// Stage 1: block (b, row) takes slice b of the row: the first maximum of l/T + Gumbel noise
// (or of l when greedy).
__global__ void __launch_bounds__(ARGMAX_THREADS)
argmax_part_kernel(const float* __restrict__ logits, int V, float temperature, uint64_t seed,
                   const ChunkMeta* __restrict__ meta, float* __restrict__ part_v, int32_t* __restrict__ part_i) {
    __shared__ float sv[ARGMAX_THREADS / WARP];
    __shared__ int si[ARGMAX_THREADS / WARP];
    pdl_wait();
    pdl_trigger();
    const int row = blockIdx.y, nb = gridDim.x;
    const int per = (V + nb - 1) / nb, i0 = blockIdx.x * per, i1 = min(V, i0 + per);
    const float* l = logits + static_cast<int64_t>(row) * V;
    const bool sample = temperature > 0.0f;
    const uint64_t stream = mix64(seed ^ (static_cast<uint64_t>(meta->step) << 32) ^ static_cast<uint64_t>(row));
    float best = -FLT_MAX;
    int bi = 0x7fffffff;
    for (int i = i0 + threadIdx.x; i < i1; i += blockDim.x) {
        float v = l[i];
        if (sample) {
            // Gumbel-max: argmax(l/T + G) is a sample of softmax(l/T).
            const double u = (static_cast<double>(mix64(stream + static_cast<uint64_t>(i)) >> 11) + 0.5) * 0x1p-53;
            v = v / temperature - static_cast<float>(log(-log(u)));
        }
        arg_better(v, i, best, bi);
    }
    arg_block(best, bi, sv, si);
    if (threadIdx.x == 0) {
        part_v[row * nb + blockIdx.x] = sv[0];
        part_i[row * nb + blockIdx.x] = si[0];
    }
}

// Stage 2: one block per row merges the slices' winners.
__global__ void __launch_bounds__(ARGMAX_THREADS)
argmax_final_kernel(int nb, const float* __restrict__ part_v, const int32_t* __restrict__ part_i,
                    int32_t* __restrict__ out) {
    __shared__ float sv[ARGMAX_THREADS / WARP];
    __shared__ int si[ARGMAX_THREADS / WARP];
    pdl_wait();
    pdl_trigger();
    const int row = blockIdx.x;
    float best = -FLT_MAX;
    int bi = 0x7fffffff;
    for (int b = threadIdx.x; b < nb; b += blockDim.x) arg_better(part_v[row * nb + b], part_i[row * nb + b], best, bi);
    arg_block(best, bi, sv, si);
    if (threadIdx.x == 0) out[row] = si[0] == 0x7fffffff ? 0 : si[0];
}

void argmax_rows(const float* logits, int V, int rows, float temperature, uint64_t seed, const ChunkMeta* meta,
                 float* part_v, int32_t* part_i, int32_t* out, cudaStream_t st) {
    dim3 grid(ARGMAX_SLICES, rows);
    launch("argmax_part_kernel", argmax_part_kernel, grid, dim3(ARGMAX_THREADS), 0, st, logits, V, temperature, seed,
           meta, part_v, part_i);
    launch("argmax_final_kernel", argmax_final_kernel, dim3(rows), dim3(ARGMAX_THREADS), 0, st, ARGMAX_SLICES, part_v,
           part_i, out);
}

__global__ void advance_kernel(ChunkMeta* meta, int32_t* tokens, int32_t* chunk_slot, int32_t* pos_slot,
                               const int32_t* next, int32_t* out_list) {
    pdl_wait();
    pdl_trigger();
    const int tok = next[0];
    out_list[meta->step] = tok;
    meta->step += 1;
    tokens[0] = tok;
    const int p = meta->n_pos, slot = chunk_slot[0] + 1;  // scratch slots are consecutive
    pos_slot[p] = slot;
    chunk_slot[0] = slot;
    meta->T = 1;
    meta->pos0 = p;
    meta->n_pos = p + 1;
    meta->rot0 += 1;  // scratch rotation indexes are consecutive too
}

void advance_scratch(ChunkMeta* meta, int32_t* tokens, int32_t* chunk_slot, int32_t* pos_slot, const int32_t* next,
                     int32_t* out_list, cudaStream_t st) {
    launch("advance_kernel", advance_kernel, dim3(1), dim3(1), 0, st, meta, tokens, chunk_slot, pos_slot, next,
           out_list);
}

}  // namespace cuda
}  // namespace lg

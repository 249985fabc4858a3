// Attention over the sink+ring+scratch cache on the device, with the rules of native/kv_cache.h:
// keys are rotated ONCE, when written, by their rotation index (stream index; angles in double,
// rounded to float) and kept in fp32 with their bias (qwen2's key biases reach |354|, beyond fp16's
// resolution for the token-dependent part); values in fp16. A query is rotated by its own rotation
// index for ring and scratch keys, and by its cache position for sink keys. GQA, split over
// 32-position chunks (staged in shared memory with coalesced loads) and merged by a combine in a
// fixed chunk order, so results do not depend on T. Knows nothing about weights or eviction policy.
#pragma once
#include "common.cuh"

namespace lg {
namespace cuda {

struct AttnShape {
    int n_head, n_head_kv, head_dim, capacity;
    bool neox;          // RoPE pairs (i, i + hd/2) (qwen2) or (2i, 2i + 1) (llama)
    int max_chunks;     // ceil(capacity / ATT_CHUNK): stride of the partial results
};

// Dynamic shared memory of attention's partial kernel for this shape (the engine checks it fits).
size_t attention_smem_bytes(const AttnShape& s);

// Cache of one layer: k [n_head_kv][capacity][head_dim] float (rotated), v the same in half.
// k_new (with bias), v_new: [T][n_head_kv * head_dim]; chunk_slot[T]; theta[head_dim / 2] the
// RoPE frequencies in double; meta on the device (rot0: rotation index of token 0).
void kv_store(const AttnShape& s, float* k_cache, __half* v_cache, const float* k_new, const float* v_new,
              const double* theta, const int32_t* chunk_slot, const ChunkMeta* meta, int T, cudaStream_t st);

// out[T][n_head * head_dim] = softmax(q . k / sqrt(hd)) v over positions 0..pos0+t, position p's
// K/V in slot pos_slot[p]; q rotated as the header says. rope_cos/sin: [capacity][hd/2] by position.
// part_acc: [T][n_head][max_chunks][hd], part_ml: [T][n_head][max_chunks][2] scratch.
// n_chunks: number of 32-position chunks to launch (an upper bound of ceil(n_pos / 32)).
void attention(const AttnShape& s, const float* k_cache, const __half* v_cache, const float* q,
               const int32_t* pos_slot, const double* theta, const float* rope_cos, const float* rope_sin,
               const ChunkMeta* meta, int T, int n_chunks, float* part_acc, float* part_ml, float* out,
               cudaStream_t st);

}  // namespace cuda
}  // namespace lg

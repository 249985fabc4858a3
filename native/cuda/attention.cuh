// Attention over the sink+ring+scratch cache on the device: store the chunk's K/V (fp16) in
// their slots, then GQA attention with RoPE applied at attention time by position inside the
// cache (the rules of native/kv_cache.h), split over 32-position chunks and merged with an
// online-softmax combine. Keys are stored WITHOUT their bias, which attention adds back in fp32
// before rotating: qwen2's key biases reach |354|, where fp16 (spacing 0.25) would round away
// the token-dependent part of the key. Knows nothing about weights or eviction policy.
#pragma once
#include "common.cuh"

namespace lg {
namespace cuda {

struct AttnShape {
    int n_head, n_head_kv, head_dim, capacity;
    bool neox;          // RoPE pairs (i, i + hd/2) (qwen2) or (2i, 2i + 1) (llama)
    int max_chunks;     // ceil(capacity / ATT_CHUNK): stride of the partial results
};

// Cache of one layer: [n_head_kv][2][capacity][head_dim] half (K then V per head).
// k_new (W_k x, no bias), v_new: [T][n_head_kv * head_dim]; chunk_slot[T]; meta on the device.
void kv_store(const AttnShape& s, __half* layer_cache, const float* k_new, const float* v_new,
              const int32_t* chunk_slot, const ChunkMeta* meta, int T, cudaStream_t st);

// out[T][n_head * head_dim] = softmax(rope(q) . rope(k) / sqrt(hd)) v over positions
// 0..pos0+t, position p's K/V in slot pos_slot[p]. rope_cos/sin: [capacity][hd/2].
// part_acc: [T][n_head][max_chunks][hd], part_ml: [T][n_head][max_chunks][2] scratch.
// n_chunks: number of 32-position chunks to launch (an upper bound of ceil(n_pos / 32)).
// k_bias: [n_head_kv * head_dim] or nullptr (no key bias).
void attention(const AttnShape& s, const __half* layer_cache, const float* k_bias, const float* q,
               const int32_t* pos_slot,
               const float* rope_cos, const float* rope_sin, const ChunkMeta* meta, int T, int n_chunks,
               float* part_acc, float* part_ml, float* out, cudaStream_t st);

}  // namespace cuda
}  // namespace lg

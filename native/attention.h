// The attention step of one layer of forward_chunk: new keys and values into the cache, then
// softmax(q.k / sqrt(head_dim)) @ v per query over sink + ring + scratch (kv_cache.h).
#pragma once
#include "forward.h"

namespace lg {

// Write the chunk's keys (+ bias bk, may be null; rotated by their rotation index, fp32) and values
// (fp16) of layer l into their slots. Earlier keys are never touched again. Work item: (KV head, token).
void kv_store(const Config& c, const float* bk, KVCache& cache, int l, ThreadPool& pool, RunState& rs,
              const ChunkPlan& plan);

// rs.att[t][head] = softmax(q.k / sqrt(hd)) @ v over positions 0 .. pos0 + t of layer l, for every
// query (token t, head) of rs.q. Work item: (up to ATT_TOKENS tokens, KV head).
void attention(const Config& c, KVCache& cache, int l, ThreadPool& pool, RunState& rs, const ChunkPlan& plan);

}  // namespace lg

// Small per-token kernels: embedding lookup (dequantized on the fly), argmax /
// Gumbel-max sampling, and the on-device step of the greedy decode loop. Knows nothing about
// layers or attention.
#pragma once
#include "common.cuh"

namespace lg {
namespace cuda {

// x[t][E] = dequantized row tokens[t] of the embedding table (t < meta->T, grid over T).
void embed(int type, const uint8_t* table, int64_t row_bytes, int E, const int32_t* tokens,
           const ChunkMeta* meta, int T, float* x, cudaStream_t st);

// out[r] = argmax_i (logits[r][i] / temperature + gumbel(seed, step, i)) for r < rows; plain
// argmax (lowest index on ties) when temperature <= 0. step is read from meta->step. Two launches
// (ARGMAX_SLICES slices of the row, then their winners); part_v/part_i hold rows * ARGMAX_SLICES.
constexpr int ARGMAX_SLICES = 128;
void argmax_rows(const float* logits, int V, int rows, float temperature, uint64_t seed,
                 const ChunkMeta* meta, float* part_v, int32_t* part_i, int32_t* out, cudaStream_t st);

// One greedy step on the device: append token *next to out_list[meta->step], make it the
// next chunk (T = 1) at the next scratch slot and position.
void advance_scratch(ChunkMeta* meta, int32_t* tokens, int32_t* chunk_slot, int32_t* pos_slot,
                     const int32_t* next, int32_t* out_list, cudaStream_t st);

}  // namespace cuda
}  // namespace lg

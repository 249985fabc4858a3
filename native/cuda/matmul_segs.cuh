// Internal to the matmul kernels (matmul.cu: dp4a lanes; matmul_mma.cu: int8 tensor cores): the row
// segments one launch covers, the epilogues, and the tensor-core launcher. Knows nothing about layers.
#pragma once
#include "matmul.cuh"

namespace lg {
namespace cuda {

__device__ __forceinline__ float silu_mul(float g, float u) { return g / (1.0f + expf(-g)) * u; }

__device__ __forceinline__ void epilogue(float* y, int64_t idx, float acc, const float* bias, int row, int epi) {
    if (epi == static_cast<int>(Epi::Store)) y[idx] = bias ? acc + bias[row] : acc;
    else if (epi == static_cast<int>(Epi::Add)) y[idx] = y[idx] + acc;
    else y[idx] = silu_mul(acc, y[idx]);
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

// Blocks of a launch over all its segments.
inline int total_blocks(const MatSegs& g) {
    int n = 0;
    for (int i = 0; i < g.n; i++) n += g.s[i].blocks;
    return n;
}

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

// Rows per block of the tensor-core kernel (matmul_mma.cu), and its launch: segs as find_seg reads
// them (blocks of MMA_ROWS rows), L = the matrix's lanes per row (the slot count the accumulation
// order follows), a.pair records per vector; T > 1.
constexpr int MMA_WARPS = 4;
constexpr int MMA_ROWS = 16 * MMA_WARPS;
// 8-column tiles per warp: 4 (more records share each weight decode) for chunks of more than 32 tokens.
inline int mma_tiles(int T) { return T > 32 ? 4 : 2; }
void launch_mma(int type, bool dual, const MatSegs& segs, int64_t row_bytes, int K, int L, const Acts& a, int T,
                Epi epi, bool prefetch, cudaStream_t st);

}  // namespace cuda
}  // namespace lg

// Shared CUDA plumbing for the backend: error checks that throw, launch constants, the
// activation layout the matmul kernels read. Knows nothing about models or Python.
#pragma once
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace lg {
namespace cuda {

struct CudaError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

inline void check(cudaError_t e, const char* what, const char* file, int line) {
    if (e != cudaSuccess)
        throw CudaError(std::string("CUDA error in ") + what + " (" + file + ":" + std::to_string(line) +
                        "): " + cudaGetErrorString(e));
}
#define LG_CUDA_CHECK(expr) ::lg::cuda::check((expr), #expr, __FILE__, __LINE__)
#define LG_CUDA_LAUNCHED(name) ::lg::cuda::check(cudaGetLastError(), name, __FILE__, __LINE__)

constexpr int WARP = 32;
constexpr int UNIT = 32;          // elements per matmul work unit (one legacy block / K sub-block)
constexpr int QK_K_ELEMS = 256;   // K-quant super-block
constexpr int MATMUL_THREADS = 128;
constexpr int ATT_CHUNK = 32;     // cache positions per attention block (one per lane)
constexpr int ATT_THREADS = 128;
constexpr int MAX_GROUP = 32;     // n_head / n_head_kv
constexpr int MAX_HEAD_DIM_CUDA = 256;

// Activations prepared for integer dot products, mirroring native/quant.cpp prepare_acts
// (same blocks, same rounding, same precisions), so both backends multiply the same int8 values:
//   ablk = 256 for K-quant weights, 32 for legacy weights; `pair` records per vector t: 1 (q8),
//   or 2 (q8x2: record 2t+1 quantizes the residual x - d*q of record 2t). Per record r:
//   q[r*K + i]            int8 round(x * 127/amax), |q| <= 127
//   d[r*(K/ablk) + b]     amax/127 of block b
//   s[r*(K/32) + u]       sum of q over 32-element unit u (Q4_K mins, Q4_1 offsets)
// F16/F32 weights read the float x directly.
constexpr int MAX_PAIR = 2;
struct Acts {
    const int8_t* q;
    const float* d;
    const int32_t* s;
    const float* x;
    int ablk;  // 0 when only x is valid
    int pair;  // records per vector: 1 (q8) or 2 (q8x2)
};

// Per-forward metadata read by kernels from device memory, so a captured decode graph stays
// valid as the cache advances. pos_slot/chunk_slot follow native/kv_cache.h.
struct ChunkMeta {
    int T;           // tokens in this chunk
    int pos0;        // position of its first token
    int n_pos;       // positions after the write; token t attends to 0..pos0+t
    int step;        // decode steps done by the on-device greedy loop
    int n_sink_pos;  // positions 0..n_sink_pos-1 hold sink keys (rotated by their position)
    int pad;
    long long rot0;  // rotation index of the chunk's first token (+t for token t)
};
constexpr int META_INTS = sizeof(ChunkMeta) / sizeof(int32_t);  // its int32 words at the head of the plan buffer
static_assert(sizeof(ChunkMeta) == 32, "ChunkMeta layout");

}  // namespace cuda
}  // namespace lg

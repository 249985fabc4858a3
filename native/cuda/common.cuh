// Shared CUDA plumbing for the backend: error checks that throw, launch constants, the
// activation layout the matmul kernels read. Knows nothing about models or Python.
#pragma once
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

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

// A kernel's dynamic shared memory (the launch's smem bytes) as `type* name`. The host emulation of the
// kernels (tests/cuda/emu) hands each block its own buffer instead.
#ifdef LG_CUDA_HOST_EMULATION
#define LG_DYNAMIC_SHARED(type, name) type* name = reinterpret_cast<type*>(emu_dynamic_shared())
#else
#define LG_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif

// ---------------------------------------------------------------------------- launches

// How kernels are launched; per thread, set by the engine before each call (CudaEngine::set_pdl,
// set_mma). pdl: programmatic dependent launch (sm_90): a kernel may start while the one before it
// drains, prefetch its weights into L2, then wait (pdl_wait) before touching anything the earlier
// kernels write. mma: products over T > 1 tokens on int8 tensor cores (same values as dp4a).
// Both default to off until a device run has measured them (tools/device_run.sh tests both ways).
struct LaunchOpts {
    bool pdl = false;
    bool mma = false;
};
LaunchOpts& launch_opts();

// Every kernel calls pdl_wait() before its first read of activations, cache or metadata and before
// any write, then pdl_trigger(). Without the launch attribute both are no-ops. Code before the wait
// may read only what no kernel writes (weights, tables).
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

// Ask L2 to fetch [p, p + bytes) (read-only weights), spread over the lanes of the calling warp:
// 16-byte aligned bulk prefetches (the range is widened to 16 bytes; the weight buffer has slack
// at its end). A hint only: no completion to wait for.
constexpr uint32_t PREFETCH_CHUNK = 4096;
__device__ __forceinline__ void prefetch_l2_warp(const void* p, int64_t bytes, int lane) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const uintptr_t g = static_cast<uintptr_t>(__cvta_generic_to_global(p));  // the instruction takes a global address
    const uintptr_t a0 = g & ~static_cast<uintptr_t>(15);
    const uintptr_t a1 = (g + bytes + 15) & ~static_cast<uintptr_t>(15);
    for (uintptr_t a = a0 + static_cast<uintptr_t>(lane) * PREFETCH_CHUNK; a < a1; a += WARP * PREFETCH_CHUNK) {
        const uint32_t n = static_cast<uint32_t>(a1 - a < PREFETCH_CHUNK ? a1 - a : PREFETCH_CHUNK);
        asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(a), "r"(n) : "memory");
    }
#endif
}

// Launch `kernel` on `st` (programmatic dependent launch when launch_opts().pdl) and check it.
template <typename... Params, typename... Args>
inline void launch(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t st,
                   Args&&... args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = st;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = launch_opts().pdl ? 1 : 0;
    check(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...), name, __FILE__, __LINE__);
}

}  // namespace cuda
}  // namespace lg

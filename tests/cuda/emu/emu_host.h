// Host shims for compiling the CUDA matmul kernels (native/cuda/matmul*.cu) with g++: one host thread
// per CUDA thread, a block barrier for __syncthreads, warp-collective shuffles and int8 mma by their
// PTX semantics. For tests only (tests/cuda/test_kernels_emulated.py); knows nothing about models.
#pragma once
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>

#undef __shared__
#define __shared__ static  // one block runs at a time
#undef __global__
#define __global__
#undef __device__
#define __device__
#undef __launch_bounds__
#define __launch_bounds__(...)
#undef __forceinline__
#define __forceinline__ inline
#undef __restrict__
#define __restrict__

inline thread_local uint3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;
using std::max;
using std::min;

struct EmuBlock {
    std::barrier<>* block;
    float* dynamic_shared;  // the launch's dynamic shared memory, this block's

    std::barrier<>* warp[32];
    int a[32][32][4], b[32][32][2];  // [warp][lane] mma operands
    uint32_t shfl[32][32];
};
inline EmuBlock* g_emu = nullptr;  // the running block

inline void __syncthreads() { g_emu->block->arrive_and_wait(); }
inline void* emu_dynamic_shared() { return g_emu->dynamic_shared; }

inline uint32_t __vsub4(uint32_t a, uint32_t b) {
    uint32_t r = 0;
    for (int j = 0; j < 4; j++) r |= (((a >> (8 * j)) - (b >> (8 * j))) & 0xffu) << (8 * j);
    return r;
}
inline uint32_t __funnelshift_r(uint32_t lo, uint32_t hi, uint32_t sh) {
    return static_cast<uint32_t>(((static_cast<uint64_t>(hi) << 32) | lo) >> (sh & 31));
}
inline int __dp4a(int a, int b, int c) {
    for (int j = 0; j < 4; j++) c += static_cast<int8_t>(a >> (8 * j)) * static_cast<int8_t>(b >> (8 * j));
    return c;
}
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fsub_rn(float a, float b) { return a - b; }

template <class T>
inline T __shfl_xor_sync(unsigned, T v, int off) {
    static_assert(sizeof(T) == 4, "32-bit shuffles only");
    const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
    std::memcpy(&g_emu->shfl[w][lane], &v, 4);
    g_emu->warp[w]->arrive_and_wait();
    T r;
    std::memcpy(&r, &g_emu->shfl[w][lane ^ off], 4);
    g_emu->warp[w]->arrive_and_wait();
    return r;
}

// mma.sync.aligned.m16n8k{32,16}.row.col.s32.s8.s8.s32, c += A B, by the PTX ISA's fragment layout
// (lane = 4 g + k): A words {k of row g, k of row g + 8, k + 4 of row g, k + 4 of row g + 8} (k16: the
// first two), B words {k, k + 4} of column g (k16: the first), C {(g, 2k), (g, 2k + 1), (g + 8, 2k),
// (g + 8, 2k + 1)}; word k of a row holds elements 4k .. 4k + 3, lowest byte first.
inline void emu_mma(int (&c)[4], const int* a, int na, const int* b, int nb) {
    const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int i = 0; i < na; i++) g_emu->a[w][lane][i] = a[i];
    for (int i = 0; i < nb; i++) g_emu->b[w][lane][i] = b[i];
    g_emu->warp[w]->arrive_and_wait();
    const int KK = na == 4 ? 32 : 16;
    int8_t A[16][32], B[32][8];
    for (int l = 0; l < 32; l++) {
        const int g = l >> 2, k = l & 3;
        for (int j = 0; j < 4; j++) {
            A[g][4 * k + j] = static_cast<int8_t>(g_emu->a[w][l][0] >> (8 * j));
            A[g + 8][4 * k + j] = static_cast<int8_t>(g_emu->a[w][l][1] >> (8 * j));
            B[4 * k + j][g] = static_cast<int8_t>(g_emu->b[w][l][0] >> (8 * j));
            if (KK == 32) {
                A[g][16 + 4 * k + j] = static_cast<int8_t>(g_emu->a[w][l][2] >> (8 * j));
                A[g + 8][16 + 4 * k + j] = static_cast<int8_t>(g_emu->a[w][l][3] >> (8 * j));
                B[16 + 4 * k + j][g] = static_cast<int8_t>(g_emu->b[w][l][1] >> (8 * j));
            }
        }
    }
    g_emu->warp[w]->arrive_and_wait();  // every lane has read the operands
    const int g = lane >> 2, k = lane & 3;
    const int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * k, 2 * k + 1, 2 * k, 2 * k + 1};
    for (int i = 0; i < 4; i++)
        for (int e = 0; e < KK; e++) c[i] += A[rows[i]][e] * B[e][cols[i]];
}

// Runtime detection of a CUDA device. Knows nothing about models.
#include "backend.h"
#include "common.cuh"

namespace lg {
namespace cuda {

LaunchOpts& launch_opts() {
    thread_local LaunchOpts o;
    return o;
}

bool cuda_available() {
    int n = 0;
    // No driver, no device or a driver too old for this runtime: all mean "use the CPU".
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();  // clear the sticky error so later calls start clean
        return false;
    }
    return n > 0;
}

std::string device_name(int device) {
    cudaDeviceProp prop;
    LG_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    return prop.name;
}

double d2d_bandwidth_gbps(size_t bytes, int iters) {
    // Bytes read plus bytes written per cudaMemcpy, over the mean of `iters` copies after one warm-up.
    void *a = nullptr, *b = nullptr;
    cudaEvent_t t0 = nullptr, t1 = nullptr;
    float ms = 0.0f;
    LG_CUDA_CHECK(cudaMalloc(&a, bytes));
    LG_CUDA_CHECK(cudaMalloc(&b, bytes));
    try {
        LG_CUDA_CHECK(cudaMemset(a, 1, bytes));
        LG_CUDA_CHECK(cudaEventCreate(&t0));
        LG_CUDA_CHECK(cudaEventCreate(&t1));
        LG_CUDA_CHECK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
        LG_CUDA_CHECK(cudaEventRecord(t0));
        for (int i = 0; i < iters; i++) LG_CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice));
        LG_CUDA_CHECK(cudaEventRecord(t1));
        LG_CUDA_CHECK(cudaEventSynchronize(t1));
        LG_CUDA_CHECK(cudaEventElapsedTime(&ms, t0, t1));
    } catch (...) {
        cudaFree(a);
        cudaFree(b);
        throw;
    }
    cudaEventDestroy(t0);
    cudaEventDestroy(t1);
    cudaFree(a);
    cudaFree(b);
    return 2.0 * static_cast<double>(bytes) * iters / (ms * 1e-3) / 1e9;
}

}  // namespace cuda
}  // namespace lg

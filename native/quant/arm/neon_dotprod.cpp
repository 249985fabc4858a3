// The NEON kernels of neon.cpp, neon_legacy.cpp, neon_rowlane.cpp and neon_packed.cpp again, compiled for Armv8.2-A + dotprod (sdot) in
// namespace neon_dotprod; arm/dispatch.cpp runs them only on a CPU whose HWCAP says it has dotprod.
// The shared headers come first, outside the target pragma, so their inline functions stay plain Armv8-A.
#include <cmath>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "quant/arm/plan.h"
#include "quant/blocks.h"
#include "quant/kernels.h"

#if LG_SIMD_NEON
#include <arm_neon.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("dotprod"))), apply_to = function)
#else
#pragma GCC target("arch=armv8.2-a+dotprod")
#endif
#define LG_NEON_NS neon_dotprod
#define LG_NEON_DOTPROD 1
#include "quant/arm/neon.cpp"
#include "quant/arm/neon_legacy.cpp"
#include "quant/arm/neon_rowlane.cpp"
#include "quant/arm/neon_packed.cpp"
#if defined(__clang__)
#pragma clang attribute pop
#endif

#endif

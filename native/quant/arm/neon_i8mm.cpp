// The NEON kernels again, compiled for Armv8.2-A + dotprod + i8mm in namespace neon_i8mm: the GGUF kernels are
// the dotprod ones; the packed kernels (neon_packed_mm.h, in neon_packed.cpp under LG_NEON_I8MM) use smmla
// over the row-pair layout.
// arm/dispatch.cpp runs them only on a CPU whose HWCAP says dotprod and whose HWCAP2 says i8mm.
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
#pragma clang attribute push(__attribute__((target("dotprod,i8mm"))), apply_to = function)
#else
#pragma GCC target("arch=armv8.2-a+dotprod+i8mm")
#endif
#define LG_NEON_NS neon_i8mm
#define LG_NEON_DOTPROD 1
#define LG_NEON_I8MM 1
#include "quant/arm/neon.cpp"
#include "quant/arm/neon_legacy.cpp"
#include "quant/arm/neon_rowlane.cpp"
#include "quant/arm/neon_packed.cpp"
#if defined(__clang__)
#pragma clang attribute pop
#endif

#endif

// The aarch64 kernel plan: which kernel family runs a call of (weight type, K, records). NEON has the
// reducing kernels only, for every quantized type and size; float weights take the scalar path.
#pragma once
#include <cstdint>

#include "quant/blocks.h"
#include "quant/kernels.h"

namespace lg::quant {

namespace neon {

inline Kernel plan(GGMLType wt, int64_t K, int n_rec) {
    return act_kind(wt) == ActKind::None ? Kernel::none : Kernel::reduce;
}

}  // namespace neon

}  // namespace lg::quant

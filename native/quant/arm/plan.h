// The aarch64 kernel plan: which kernel family runs a call of (weight type, K, records), for every NEON
// variant. One-record calls send rows in groups of ROWLANE_ROWS through the row-lane kernels (four rows in the
// lanes of one vector: neon_rowlane.cpp, neon_legacy.cpp), the rows left through the reducing kernels; float weights take
// the scalar path. Every choice is bit-identical (kernels.h). No aarch64 board has timed these: the choice
// rests on the llvm-mca model of the Cortex-A76 (docs/perf/2026-12-02-arm-kernels.md, tools/bench/bench_arm.py).
#pragma once
#include <cstdint>

#include "quant/blocks.h"
#include "quant/kernels.h"

namespace lg::quant {

namespace neon {

constexpr int ROWLANE_ROWS = 4;  // rows per row-lane group: one int32/float lane of a 128-bit vector each
// Row-lane kernels for calls of up to this many records (one token of one-term activations); larger calls
// decode each weight block once for up to R_TILE records in the reducing kernels, which the Cortex-A76
// model puts ahead from two records on (Q4_K 39.5 vs 42.0 cycles per block and record, Q6_K 55.6 vs 73.9).
// modelled: docs/perf/2026-12-02-arm-kernels.md#plan
constexpr int ROWLANE_MAX_RECORDS = 1;

struct Plan {
    Kernel rows4;  // rows in groups of ROWLANE_ROWS (rowlane) or none
    Kernel rest;   // the rows left: reduce, or none (the scalar path runs the call)
};

inline Plan plan(GGMLType wt, int64_t K, int n_rec) {
    if (act_kind(wt) == ActKind::None) return {Kernel::none, Kernel::none};
    return {n_rec <= ROWLANE_MAX_RECORDS ? Kernel::rowlane : Kernel::none, Kernel::reduce};
}

}  // namespace neon

}  // namespace lg::quant

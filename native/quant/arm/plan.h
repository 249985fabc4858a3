// The aarch64 kernel plan: which kernel family runs a call of (weight type, K, records), for every NEON
// variant. The calls below send rows in groups of ROWLANE_ROWS through the row-lane kernels (four rows in
// the lanes of one vector: neon_rowlane.cpp, neon_legacy.cpp), the rows left through the reducing kernels; float weights take
// the scalar path. Every choice is bit-identical (kernels.h). No aarch64 board has timed these: the choice
// rests on the llvm-mca model of the Cortex-A76 (docs/perf/2026-12-02-arm-kernels.md, tools/bench/bench_arm.py).
#pragma once
#include <cstdint>

#include "quant/blocks.h"
#include "quant/kernels.h"

namespace lg::quant {

namespace neon {

// Packed matrices (quant.h: pack_weights; the engine packs every quantized matrix at load on aarch64) never
// come here: matmul_packed runs every call on them through neon_packed.cpp, in tiles of 8, 4, 2 and 1
// records (the i8mm variant: its smmla kernels, a record pair at a time). In the same model those kernels
// cost less than the families below at every record count, so packing is decided per type at load, not per
// call (docs/perf/2026-12-02-arm-kernels.md#2026-12-03-every-type-packed-tiles-of-8-records-fewer-vector-pipe-operations-per-record).
// The plan below serves matrices whose row count is not a multiple of 4 (and builds with packing turned off:
// LINEGATE_PACK_WEIGHTS=0).
constexpr int ROWLANE_ROWS = 4;  // rows per row-lane group: one int32/float lane of a 128-bit vector each
// Which calls take the row-lane kernels, from the llvm-mca model of the Cortex-A76 (cycles per block, row and
// record; docs/perf/2026-12-02-arm-kernels.md#the-plan-planh-from-the-same-model). Legacy 32-blocks: every
// call (row-lane 3-10 against the type-generic reducing kernel's 7-41). Q4_K/Q5_K: one-record calls (46 vs 51, 73 vs 85); from two records on
// the reducing kernel decodes a block once for up to R_TILE records and wins. Q6_K: never (78 vs 77).
constexpr int ROWLANE_KQUANT_MAX_RECORDS = 1;

struct Plan {
    Kernel rows4;  // rows in groups of ROWLANE_ROWS (rowlane) or none
    Kernel rest;   // the rows left: reduce, or none (the scalar path runs the call)
};

inline Plan plan(GGMLType wt, int64_t K, int n_rec) {
    if (act_kind(wt) == ActKind::None) return {Kernel::none, Kernel::none};
    if (is_legacy(wt)) return {Kernel::rowlane, Kernel::reduce};
    const bool rowlane = wt != GGMLType::Q6_K && n_rec <= ROWLANE_KQUANT_MAX_RECORDS;
    return {rowlane ? Kernel::rowlane : Kernel::none, Kernel::reduce};
}

}  // namespace neon

}  // namespace lg::quant

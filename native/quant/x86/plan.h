// The x86 kernel plans: which kernel family runs a call of (weight type, K, records), one table per ISA,
// holding every threshold that chooses a kernel. The kernels read their size limits from here; the
// dispatch (matmul_simd in avx2.cpp / avx512.cpp) only follows the plan. Every choice is bit-identical
// (kernels.h); the numbers are speed tunings, each pointing to its measurement in docs/perf/.
#pragma once
#include <cstdint>

#include "quant/blocks.h"
#include "quant/kernels.h"

namespace lg::quant {

// ---- AVX2 (x86-64-v3, optionally AVX-VNNI) ---------------------------------------------------------
namespace avx2 {

constexpr int ROWLANE_ROWS = 8;  // rows per row-lane group: one ymm dword lane each
// Q4_K calls of up to this many records (one token) over rows of up to ROWLANE_ONE_TOKEN_MAX_KBLOCKS
// blocks: rowlane_rows_one_token (records pre-broadcast once per call, on the stack).
// tuned: docs/perf/2026-12-01-avx2-kernels-zen3.md#one-token
constexpr int ROWLANE_ONE_TOKEN_MAX_RECORDS = 2;
constexpr int64_t ROWLANE_ONE_TOKEN_MAX_KBLOCKS = 40;  // K <= 10240: 2 records x 40 blocks x 2 KB
// Q4_K from here: two row groups a pass (rowlane_rows_pair). tuned: docs/perf/2026-12-01-avx2-kernels-zen3.md#rowlane-pair
constexpr int ROWLANE_PAIR_MIN_RECORDS = 32;
// Q6_K from here: rowlane_rows; below: reduce_rows8_q6k. tuned: docs/perf/2026-12-01-avx2-kernels-zen3.md#reduce-rows8
constexpr int ROWLANE_Q6K_MIN_RECORDS = 9;

struct Plan {
    Kernel rows16;  // rows in groups of 16 (rowlane_pair) or none
    Kernel rows8;   // the rows left in groups of 8 (rowlane, rowlane_one_token, reduce_rows8) or none
    Kernel rest;    // the rows left (fewer than 8): reduce, or none (the scalar path runs the call)
};

inline Plan plan(GGMLType wt, int64_t K, int n_rec) {
    switch (wt) {
        case GGMLType::Q4_K:
            if (n_rec <= ROWLANE_ONE_TOKEN_MAX_RECORDS && K / QK_K <= ROWLANE_ONE_TOKEN_MAX_KBLOCKS)
                return {Kernel::none, Kernel::rowlane_one_token, Kernel::reduce};
            return {n_rec >= ROWLANE_PAIR_MIN_RECORDS ? Kernel::rowlane_pair : Kernel::none, Kernel::rowlane, Kernel::reduce};
        case GGMLType::Q5_K: return {Kernel::none, Kernel::none, Kernel::reduce};
        case GGMLType::Q6_K:
            return {Kernel::none, n_rec >= ROWLANE_Q6K_MIN_RECORDS ? Kernel::rowlane : Kernel::reduce_rows8, Kernel::reduce};
        case GGMLType::Q4_0: case GGMLType::Q4_1: case GGMLType::Q5_0: case GGMLType::Q5_1: case GGMLType::Q8_0:
            return {Kernel::none, Kernel::rowlane, Kernel::reduce};
        default: return {Kernel::none, Kernel::none, Kernel::none};
    }
}

// Kernel variants of a shape for the calibrated plan (quant.h): "static" (the plan above) first, then
// every other plan that runs the shape; all bit-identical. Q4_K and Q6_K only (the others: static).
struct Variant {
    const char* name;
    Plan plan;
};

inline int variants(GGMLType wt, int64_t K, int n_rec, Variant* all) {
    Variant out[8];
    int n = 0;
    out[n++] = {"static", plan(wt, K, n_rec)};
    if (wt == GGMLType::Q4_K) {
        if (n_rec <= 2 && K / QK_K <= ROWLANE_ONE_TOKEN_MAX_KBLOCKS)
            out[n++] = {"rowlane_one_token", {Kernel::none, Kernel::rowlane_one_token, Kernel::reduce}};
        out[n++] = {"rowlane", {Kernel::none, Kernel::rowlane, Kernel::reduce}};
        out[n++] = {"rowlane_pair", {Kernel::rowlane_pair, Kernel::rowlane, Kernel::reduce}};
        out[n++] = {"reduce", {Kernel::none, Kernel::none, Kernel::reduce}};
    } else if (wt == GGMLType::Q6_K) {
        out[n++] = {"rowlane", {Kernel::none, Kernel::rowlane, Kernel::reduce}};
        if (n_rec <= 8) out[n++] = {"reduce_rows8", {Kernel::none, Kernel::reduce_rows8, Kernel::reduce}};
        out[n++] = {"reduce", {Kernel::none, Kernel::none, Kernel::reduce}};
    }
    int m = 0;  // the static plan's own choice is not listed twice
    for (int i = 0; i < n; ++i) {
        const Plan& p = out[i].plan;
        if (i == 0 || p.rows16 != out[0].plan.rows16 || p.rows8 != out[0].plan.rows8 || p.rest != out[0].plan.rest) all[m++] = out[i];
    }
    return m;
}

}  // namespace avx2

// ---- AVX-512 (BW, VL, VNNI) ---------------------------------------------------------------------------
namespace avx512 {

constexpr int R_TILE = 8;                    // records per pass of the reducing kernels: one lane each
constexpr int64_t REDUCE_MAX_KBLOCKS = 128;  // K-quant K <= 32768 (per-tile tables on the stack); else scalar
// The one-token reducing kernel for Q4_K and Q6_K (avx512_reduce1.cpp): 1-2 records, K <= 10240 (records,
// rearranged, on the stack).
constexpr int64_t REDUCE1_MAX_KBLOCKS = 40;

constexpr int ROWLANE_ROWS = 16;  // rows per row-lane group: one zmm lane each
// Row-lane kernels: legacy types up to ROWLANE_MAX_RECORDS records; K-quants also K <= 10240 (records,
// rearranged, live on the stack), Q4_K 1-8 records or an even count, Q6_K an even count from
// ROWLANE_Q6K_MIN_RECORDS (rowlane_sizes instantiates exactly these).
// tuned: docs/perf/2026-11-30-avx512-kernels.md#rowlane, #rowlane-q6k-min
constexpr int ROWLANE_MAX_RECORDS = 16;
constexpr int64_t ROWLANE_MAX_KBLOCKS = 40;
constexpr int ROWLANE_Q6K_MIN_RECORDS = 12;
// Q4_K calls of up to this many records (one token) decode fused with the dot products (rowlane_fused),
// and over rows longer than ROWLANE_NEAR_MIN_KBLOCKS blocks prefetch near (the same rows' next blocks).
// tuned: docs/perf/2026-11-30-avx512-kernels.md#rowlane-fused, #near-prefetch
constexpr int ROWLANE_ONE_TOKEN_MAX_RECORDS = 2;
constexpr int64_t ROWLANE_NEAR_MIN_KBLOCKS = 8;

// K-quant broadcast kernels (records in lanes), K <= 20480 (the tiles live on the stack). Lanes per
// record G: 1 from BROADCAST_MIN_RECORDS records; 2 for BROADCAST_G2_MIN_RECORDS up to that, and for
// Q6_K calls of one two-lane tile plus up to BROADCAST_G2_MAX_REST records (those through the reducing
// kernel); 4 for Q6_K calls from BROADCAST_G4_MIN_RECORDS. Other calls: the reducing kernel.
// tuned: docs/perf/2026-11-30-avx512-kernels.md#broadcast-min-records, #broadcast-g2, #broadcast-g2-rest, #broadcast-g4
constexpr int64_t BROADCAST_MAX_KBLOCKS = 80;
constexpr int BROADCAST_MIN_RECORDS = 9;
constexpr int BROADCAST_G2_MIN_RECORDS = 5;
constexpr int BROADCAST_G2_RECORDS = 16 / 2;  // records per two-lane tile
constexpr int BROADCAST_G2_MAX_REST = 4;
constexpr int BROADCAST_G4_MIN_RECORDS = 3;
// A one-lane call's last partial tile of at most this many records goes through the reducing kernel (one
// R_TILE tile) rather than a padded broadcast tile.
constexpr int BROADCAST_MAX_REDUCED_REST = R_TILE;
// Legacy broadcast kernel: types without a min (Q4_0, Q5_0, Q8_0), from this many records, same K limit.
constexpr int BROADCAST_LEGACY_MIN_RECORDS = 12;
constexpr int64_t BROADCAST_LEGACY_MAX_BLOCKS = BROADCAST_MAX_KBLOCKS * QK_K / QK32;

struct Plan {
    Kernel rows16;  // rows in groups of 16 first (rowlane) or none
    Kernel rest;    // the rows left: reduce, broadcast (G = 1), broadcast_g2, broadcast_g4, or none (scalar)
};

inline bool rowlane_takes(GGMLType wt, int64_t K, int n_rec) {
    if (n_rec > ROWLANE_MAX_RECORDS) return false;
    if (is_legacy(wt)) return true;
    if (K / QK_K > ROWLANE_MAX_KBLOCKS) return false;
    if (wt == GGMLType::Q4_K) return n_rec <= 8 || n_rec % 2 == 0;
    return wt == GGMLType::Q6_K && n_rec >= ROWLANE_Q6K_MIN_RECORDS && n_rec % 2 == 0;
}

inline Kernel kquant_rest(GGMLType wt, int64_t nb, int n_rec) {
    if (nb > BROADCAST_MAX_KBLOCKS) return nb > REDUCE_MAX_KBLOCKS ? Kernel::none : Kernel::reduce;
    const bool q6 = wt == GGMLType::Q6_K;
    if (q6 && n_rec > BROADCAST_G2_RECORDS && n_rec <= BROADCAST_G2_RECORDS + BROADCAST_G2_MAX_REST) return Kernel::broadcast_g2;
    if (n_rec >= BROADCAST_MIN_RECORDS) return Kernel::broadcast;
    if (n_rec >= BROADCAST_G2_MIN_RECORDS) return Kernel::broadcast_g2;
    return q6 && n_rec >= BROADCAST_G4_MIN_RECORDS ? Kernel::broadcast_g4 : Kernel::reduce;
}

inline Plan plan(GGMLType wt, int64_t K, int n_rec) {
    const Kernel rows16 = rowlane_takes(wt, K, n_rec) ? Kernel::rowlane : Kernel::none;
    if (is_kquant(wt)) return {rows16, kquant_rest(wt, K / QK_K, n_rec)};
    if (!is_legacy(wt)) return {Kernel::none, Kernel::none};
    const bool no_min = wt == GGMLType::Q4_0 || wt == GGMLType::Q5_0 || wt == GGMLType::Q8_0;
    const bool bc = no_min && n_rec >= BROADCAST_LEGACY_MIN_RECORDS && K / QK32 <= BROADCAST_LEGACY_MAX_BLOCKS;
    return {rows16, bc ? Kernel::broadcast : Kernel::reduce};
}

// Kernel variants of a shape for the calibrated plan (quant.h): "static" (the plan above) first, then
// every other kernel choice that runs the shape; all bit-identical. For one token's Q4_K records the
// row-lane kernel comes in four forms (rowlane_kquant's mode): fused decode with near prefetch (the
// static choice over rows longer than ROWLANE_NEAR_MIN_KBLOCKS), fused with the next group prefetched
// at once (the static choice over shorter rows) or in slices between the dot products, and unfused
// (decode stored, then the sliced prefetch of calls of more records). Which is fastest depends on the
// CPU: docs/perf/2026-12-02-zen4-one-token.md. Q5_K, legacy: static.
enum class RowlaneMode { plan, unfused, fused_next, fused_near, fused_sliced };
struct Variant {
    const char* name;
    Plan plan;
    RowlaneMode rowlane;
};

inline int variants(GGMLType wt, int64_t K, int n_rec, Variant* out) {
    int n = 0;
    const Plan st = plan(wt, K, n_rec);
    out[n++] = {"static", st, RowlaneMode::plan};
    if (wt != GGMLType::Q4_K && wt != GGMLType::Q6_K) return n;
    const int64_t nb = K / QK_K;
    if (rowlane_takes(wt, K, n_rec)) {
        if (wt == GGMLType::Q4_K && n_rec <= ROWLANE_ONE_TOKEN_MAX_RECORDS) {
            // The static plan's own form (fused, near prefetch over long rows) is not listed twice.
            if (nb <= ROWLANE_NEAR_MIN_KBLOCKS || st.rows16 != Kernel::rowlane)
                out[n++] = {"rowlane_fused_near", {Kernel::rowlane, st.rest}, RowlaneMode::fused_near};
            if (nb > ROWLANE_NEAR_MIN_KBLOCKS || st.rows16 != Kernel::rowlane)
                out[n++] = {"rowlane_fused_next", {Kernel::rowlane, st.rest}, RowlaneMode::fused_next};
            out[n++] = {"rowlane_fused_sliced", {Kernel::rowlane, st.rest}, RowlaneMode::fused_sliced};
            out[n++] = {"rowlane_unfused", {Kernel::rowlane, st.rest}, RowlaneMode::unfused};
        } else if (st.rows16 != Kernel::rowlane) {
            out[n++] = {"rowlane", {Kernel::rowlane, st.rest}, RowlaneMode::plan};
        }
    }
    // The rows-in-lanes kernel alone is listed only where the static plan runs it first.
    const auto add_rest = [&](const char* name, Kernel k) {
        if (st.rows16 != Kernel::none || st.rest != k) out[n++] = {name, {Kernel::none, k}, RowlaneMode::plan};
    };
    if (nb <= REDUCE_MAX_KBLOCKS) add_rest("reduce", Kernel::reduce);
    if (n_rec <= 2 && nb <= REDUCE1_MAX_KBLOCKS) add_rest("reduce_one_token", Kernel::reduce_one_token);
    if (nb <= BROADCAST_MAX_KBLOCKS) {
        add_rest("broadcast", Kernel::broadcast);
        add_rest("broadcast_g2", Kernel::broadcast_g2);
        if (wt == GGMLType::Q6_K) add_rest("broadcast_g4", Kernel::broadcast_g4);
    }
    return n;
}

}  // namespace avx512

}  // namespace lg::quant

// x86 AVX2 row-lane kernels for K-quants (Q4_K every call, Q6_K from ROWLANE_Q6K_MIN_RECORDS records; plan.h):
// 8 weight rows per ymm, one dword lane each, record bytes broadcast, so each block's decode serves every
// record and no lane is reduced. Bit-identical to scalar.cpp. Knows nothing about threads.
#include "quant/x86/avx2_rowlane.h"

#if LG_SIMD_AVX2

namespace lg::quant::avx2 {

namespace {


// Calls of fewer records run reduce_rows8_q6k (below). History: the row-lane kernel took over from 4 records
// when the alternative was the per-block horizontal sums of reduce_kquant's loop: its decode (six 8x8
// transposes, the 6-bit assembly) cost more than those sums with 2 records. Measured then (1.5B, x86-64-v3
// build, 2 threads, after 1000 stream tokens, alternating per forward in one process, medians of 6, logits
// bit-identical), old Q6_K kernel / row-lane: T = 1 31.64 / 36.81 ms, T = 2 56.50 / 51.03, T = 3 78.16 /
// 68.18, T = 4 97.01 / 81.20, T = 8 176.81 / 146.02; prefill of 256 tokens 73.0-75.9 / 81.7-82.1 tok/s.

template <typename Block> struct RowlaneDecoded;
template <> struct RowlaneDecoded<BlockQ4K> { using type = RowlaneQ4K; };
template <> struct RowlaneDecoded<BlockQ6K> { using type = RowlaneQ6K; };

// Q4_K rows [r0, r1) ((r1 - r0) a multiple of 16) against n_rec <= ROWLANE_MAX_RECORDS records, 16 rows a pass.
void rowlane_rows_pair(const BlockQ4K* W, int64_t nb, int64_t r0, int64_t r1, const uint8_t* acts, const ActLayout& L, int n_rec,
              float* y, int64_t ldy, int pair) {
    RowlaneQ4K w0, w1;
    for (int64_t rg = r0; rg < r1; rg += 2 * ROWLANE_ROWS) {
        __m256 acc0[ROWLANE_MAX_RECORDS], acc1[ROWLANE_MAX_RECORDS];
        for (int t = 0; t < n_rec; ++t) acc0[t] = acc1[t] = _mm256_setzero_ps();
        for (int64_t b = 0; b < nb; ++b) {
            const BlockQ4K* rows[ROWLANE_ROWS];
            for (int i = 0; i < ROWLANE_ROWS; ++i) rows[i] = W + (rg + i) * nb + b;
            rowlane_decode(rows, &w0);
            for (int i = 0; i < ROWLANE_ROWS; ++i) rows[i] = W + (rg + ROWLANE_ROWS + i) * nb + b;
            rowlane_decode(rows, &w1);
            const char* ahead = reinterpret_cast<const char*>(W + (rg + 2 * ROWLANE_ROWS) * nb + 2 * ROWLANE_ROWS * b);
            for (int off = 0; off < 2 * ROWLANE_ROWS * static_cast<int>(sizeof(BlockQ4K)); off += 64) _mm_prefetch(ahead + off, _MM_HINT_T0);
            for (int t0 = 0; t0 < n_rec; t0 += ROWLANE_PAIR_CHUNK) {
                switch (n_rec - t0 < ROWLANE_PAIR_CHUNK ? n_rec - t0 : ROWLANE_PAIR_CHUNK) {
                    case 1: rowlane_block_pair<1>(w0, w1, acts, L, b, t0, acc0, acc1); break;
                    case 2: rowlane_block_pair<2>(w0, w1, acts, L, b, t0, acc0, acc1); break;
                    case 3: rowlane_block_pair<3>(w0, w1, acts, L, b, t0, acc0, acc1); break;
                    default: rowlane_block_pair<ROWLANE_PAIR_CHUNK>(w0, w1, acts, L, b, t0, acc0, acc1); break;
                }
            }
        }
        for (int t = 0; t < n_rec; t += pair) {
            const __m256 v0 = pair == 2 ? _mm256_add_ps(acc0[t], acc0[t + 1]) : acc0[t];
            const __m256 v1 = pair == 2 ? _mm256_add_ps(acc1[t], acc1[t + 1]) : acc1[t];
            _mm256_storeu_ps(y + static_cast<int64_t>(t / pair) * ldy + rg, v0);
            _mm256_storeu_ps(y + static_cast<int64_t>(t / pair) * ldy + rg + ROWLANE_ROWS, v1);
        }
    }
}

// Rows [r0, r1) ((r1 - r0) a multiple of 8) against n_rec <= ROWLANE_MAX_RECORDS records.
template <typename Block>
void rowlane_rows(const Block* W, int64_t nb, int64_t r0, int64_t r1, const uint8_t* acts, const ActLayout& L, int n_rec,
             float* y, int64_t ldy, int pair) {
    typename RowlaneDecoded<Block>::type w;
    for (int64_t rg = r0; rg < r1; rg += ROWLANE_ROWS) {
        __m256 acc[ROWLANE_MAX_RECORDS];
        for (int t = 0; t < n_rec; ++t) acc[t] = _mm256_setzero_ps();
        for (int64_t b = 0; b < nb; ++b) {
            const Block* rows[ROWLANE_ROWS];
            for (int i = 0; i < ROWLANE_ROWS; ++i) rows[i] = W + (rg + i) * nb + b;
            // the next row group (8 rows, contiguous), one eighth of a row's share per block: 8 interleaved
            // row streams are more than the hardware prefetcher follows. Measured on a Zen 3 core (no AVX-512;
            // 1.5B ffn_gate of all 28 layers, one token, one thread, CPU time, 6 rotated rounds): without it
            // 1.93x the time; two or three groups ahead 0.98 and 1.10 (within that host's run-to-run noise,
            // up to 1.9x); issued in slices between the sub-blocks 1.15 (4 rounds). Also measured there: the
            // sub-block loop unrolled 1.25 (1.28 in the 2-thread forward); both nibble halves of a dword in one
            // pass, one cache-resident matrix, 0.745-0.777 ms against 0.745. The one-token kernel runs at about
            // 10.5 GB/s per core from DRAM and from cache alike: bound by its instructions, not by memory.
            // (Two row groups per pass for one token, each broadcast serving two vpmaddubsw, cache-resident:
            // 1.44-1.51 ms against 0.73-0.78 in 2 of 3 rounds; 16 ymm registers were too few, it spilled.)
            const char* ahead = reinterpret_cast<const char*>(W + (rg + ROWLANE_ROWS) * nb + ROWLANE_ROWS * b);
            for (int off = 0; off < ROWLANE_ROWS * static_cast<int>(sizeof(Block)); off += 64) _mm_prefetch(ahead + off, _MM_HINT_T0);
            rowlane_decode(rows, &w);
            for (int t0 = 0; t0 < n_rec; t0 += ROWLANE_CHUNK) {
                switch (n_rec - t0 < ROWLANE_CHUNK ? n_rec - t0 : ROWLANE_CHUNK) {
                    case 1: rowlane_block<1>(w, acts, L, b, t0, acc); break;
                    case 2: rowlane_block<2>(w, acts, L, b, t0, acc); break;
                    case 3: rowlane_block<3>(w, acts, L, b, t0, acc); break;
                    default: rowlane_block<4>(w, acts, L, b, t0, acc); break;
                }
            }
        }
        for (int t = 0; t < n_rec; t += pair) {
            const __m256 v = pair == 2 ? _mm256_add_ps(acc[t], acc[t + 1]) : acc[t];
            _mm256_storeu_ps(y + static_cast<int64_t>(t / pair) * ldy + rg, v);
        }
    }
}

// Q4_K rows [r0, r1) ((r1 - r0) a multiple of 8) against NR <= 2 records (one token), nb <= ROWLANE_ONE_TOKEN_MAX_KBLOCKS.
template <int NR>
void rowlane_rows_one_token(const BlockQ4K* W, int64_t nb, int64_t r0, int64_t r1, const uint8_t* acts, const ActLayout& L,
                 float* y, int64_t ldy, int pair) {
    alignas(32) __m256i xe_buf[NR][ROWLANE_ONE_TOKEN_MAX_KBLOCKS * 64];
    const __m256i* xe[NR];
    for (int t = 0; t < NR; ++t) {
        const int8_t* qx = reinterpret_cast<const int8_t*>(acts + static_cast<int64_t>(t) * L.stride);
        for (int64_t d = 0; d < nb * 64; ++d) xe_buf[t][d] = bcast4(qx + 4 * d);
        xe[t] = xe_buf[t];
    }
    RowlaneQ4K w;
    for (int64_t rg = r0; rg < r1; rg += ROWLANE_ROWS) {
        __m256 acc[NR];
        for (int t = 0; t < NR; ++t) acc[t] = _mm256_setzero_ps();
        for (int64_t b = 0; b < nb; ++b) {
            const BlockQ4K* rows[ROWLANE_ROWS];
            for (int i = 0; i < ROWLANE_ROWS; ++i) rows[i] = W + (rg + i) * nb + b;
            const char* ahead = reinterpret_cast<const char*>(W + (rg + ROWLANE_ROWS) * nb + ROWLANE_ROWS * b);
            for (int off = 0; off < ROWLANE_ROWS * static_cast<int>(sizeof(BlockQ4K)); off += 64) _mm_prefetch(ahead + off, _MM_HINT_T0);
            rowlane_decode(rows, &w);
            rowlane_block<NR, true>(w, acts, L, b, 0, acc, xe);
        }
        for (int t = 0; t < NR; t += pair) {
            const __m256 v = pair == 2 ? _mm256_add_ps(acc[t], acc[t + 1]) : acc[t];
            _mm256_storeu_ps(y + static_cast<int64_t>(t / pair) * ldy + rg, v);
        }
    }
}

// Rows [r0, r1) ((r1 - r0) a multiple of 8), ROWLANE_MAX_RECORDS records (even: pairs stay whole) a pass.
template <typename Block>
void rowlane_passes(const uint8_t* W, int64_t nb, int64_t r0, int64_t r1, const uint8_t* acts, const ActLayout& L, int n_rec,
                    float* y, int64_t ldy, int pair) {
    for (int g0 = 0; g0 < n_rec && r0 < r1; g0 += ROWLANE_MAX_RECORDS)
        rowlane_rows(reinterpret_cast<const Block*>(W), nb, r0, r1, acts + static_cast<int64_t>(g0) * L.stride, L,
                     n_rec - g0 < ROWLANE_MAX_RECORDS ? n_rec - g0 : ROWLANE_MAX_RECORDS, y + static_cast<int64_t>(g0 / pair) * ldy,
                     ldy, pair);
}

}  // namespace

int64_t rowlane_kquant(const Plan& p, GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts,
                       int n_rec, float* y, int64_t ldy, int pair) {
    const int64_t nb = K / QK_K;
    const ActLayout L = act_layout(wt, K);
    const int64_t r8 = r0 + (r1 - r0) / ROWLANE_ROWS * ROWLANE_ROWS;
    if (wt == GGMLType::Q6_K) {
        rowlane_passes<BlockQ6K>(W, nb, r0, r8, acts, L, n_rec, y, ldy, pair);
        return r8;
    }
    const BlockQ4K* W4 = reinterpret_cast<const BlockQ4K*>(W);
    if (p.rows8 == Kernel::rowlane_one_token) {
        if (n_rec == 2) rowlane_rows_one_token<2>(W4, nb, r0, r8, acts, L, y, ldy, pair);
        else rowlane_rows_one_token<1>(W4, nb, r0, r8, acts, L, y, ldy, pair);
        return r8;
    }
    if (p.rows16 == Kernel::rowlane_pair) {
        const int64_t r16 = r0 + (r8 - r0) / (2 * ROWLANE_ROWS) * (2 * ROWLANE_ROWS);
        for (int g0 = 0; g0 < n_rec && r0 < r16; g0 += ROWLANE_MAX_RECORDS)
            rowlane_rows_pair(W4, nb, r0, r16, acts + static_cast<int64_t>(g0) * L.stride, L,
                              n_rec - g0 < ROWLANE_MAX_RECORDS ? n_rec - g0 : ROWLANE_MAX_RECORDS,
                              y + static_cast<int64_t>(g0 / pair) * ldy, ldy, pair);
        r0 = r16;
    }
    rowlane_passes<BlockQ4K>(W, nb, r0, r8, acts, L, n_rec, y, ldy, pair);
    return r8;
}

}  // namespace lg::quant::avx2

#endif

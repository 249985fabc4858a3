// x86 AVX-512 row-lane kernels for Q4_K calls of 1-16 activation records and
// Q6_K calls of 12-16 (decode, verification of drafted tokens): a zmm holds 16 weight rows, one lane each, and activation
// bytes are broadcast from memory, so each block's decode is shared by every record and nothing is
// reduced across lanes.
// Bit-identical to the other kernels. Knows nothing about threads.
#include "quant/x86/avx512.h"

#if LG_SIMD_AVX512

namespace lg::quant::avx512 {

namespace {

// Why: with few records the broadcast kernel spends its instructions on broadcasts and per-row scales,
// and the reducing kernel folds lanes per block. Here 16 rows of a block are decoded together (16x16
// dword transposes), then one vpdpbusd per 4 broadcast record bytes covers 16 rows. The same exact int32
// sums (S_j, i1, i2) and canonical float steps (blocks.h) in block order, so the scalar path's bits.
constexpr int ROWLANE_CHUNK = 8;         // records per pass over a decoded block (8 S_j + 8 i1 + 8 float sums)
// 9-16 records take two passes over each decoded block. Measured: docs/perf/2026-11-30-avx512-kernels.md#rowlane

// The next row group's share for one block (see rowlane_rows), issued in `parts` slices, slice k of them.
struct RowlaneAhead {
    const char* p;  // nullptr: nothing to prefetch
    int bytes;
};
inline void rowlane_prefetch_part(const RowlaneAhead& a, int k, int parts) {
    if (a.p == nullptr) return;
    const int lines = (a.bytes + 63) / 64, l0 = lines * k / parts, l1 = lines * (k + 1) / parts;
    for (int l = l0; l < l1; ++l) _mm_prefetch(a.p + 64 * l, _MM_HINT_T0);
}

// r[i] = dword row i in, r[d] lane i = dword d of row i out (a 16x16 transpose).
inline void transpose16(__m512i* r) {
    __m512i t[16], u[16];
    for (int i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    // u[4i + k], 128-bit lane L = dword 4L + k of rows 4i .. 4i + 3
    for (int i = 0; i < 4; ++i) {
        u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (int k = 0; k < 4; ++k) {  // a 4x4 transpose of 128-bit lanes
        const __m512i v0 = _mm512_shuffle_i32x4(u[k], u[4 + k], 0x44), v1 = _mm512_shuffle_i32x4(u[k], u[4 + k], 0xEE);
        const __m512i v2 = _mm512_shuffle_i32x4(u[8 + k], u[12 + k], 0x44), v3 = _mm512_shuffle_i32x4(u[8 + k], u[12 + k], 0xEE);
        r[k] = _mm512_shuffle_i32x4(v0, v2, 0x88);
        r[4 + k] = _mm512_shuffle_i32x4(v0, v2, 0xDD);
        r[8 + k] = _mm512_shuffle_i32x4(v1, v3, 0x88);
        r[12 + k] = _mm512_shuffle_i32x4(v1, v3, 0xDD);
    }
}

// Block b of 16 rows, decoded with one row per lane.
struct RowlaneQ4K {
    __m512i raw[32];  // dword d of qs: low nibbles = sub-block 2 (d / 8), high = 2 (d / 8) + 1, dword d % 8
    __m512i sc[8];    // 6-bit scale of sub-block j
    __m512i mn[4];    // mins of sub-blocks 2m (low int16) and 2m + 1 (high int16)
    __m512 dw, dm;
};

// rows[i] = block b of row i (a BlockQ4K: d, dmin, scales[12], qs[128]).
inline void rowlane_decode_scales(const BlockQ4K* const* rows, RowlaneQ4K* o) {  // all but the values
    // Headers: d | dmin << 16, then the 12 scale bytes as dwords a, b, c.
    const void* p[ROWLANE_ROWS];
    for (int i = 0; i < ROWLANE_ROWS; ++i) p[i] = rows[i];
    __m512i hd[4];
    dwords4_of_rows(p, hd);
    const __m512i dd = hd[0], a = hd[1], b = hd[2], c = hd[3];
    o->dw = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dd));
    o->dm = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dd, 16)));
    // q4k_unpack, 16 rows at once: j < 4: sc = a_j & 63, mn = b_j & 63; j >= 4 (k = j - 4):
    // sc = (c_k & 15) | (a_k >> 6) << 4, mn = (c_k >> 4) | (b_k >> 6) << 4 (x_k = byte k of x).
    const __m512i m63 = _mm512_set1_epi32(63), m15 = _mm512_set1_epi32(15);
    __m512i mn[8];
    for (int k = 0; k < 4; ++k) {
        o->sc[k] = _mm512_and_si512(_mm512_srli_epi32(a, 8 * k), m63);
        mn[k] = _mm512_and_si512(_mm512_srli_epi32(b, 8 * k), m63);
        // select(m15, lo, hi) = (lo & 15) | (hi & ~15), then & 63
        o->sc[4 + k] = _mm512_and_si512(
            _mm512_ternarylogic_epi32(m15, _mm512_srli_epi32(c, 8 * k), _mm512_srli_epi32(a, 8 * k + 2), 0xCA), m63);
        mn[4 + k] = _mm512_and_si512(
            _mm512_ternarylogic_epi32(m15, _mm512_srli_epi32(c, 8 * k + 4), _mm512_srli_epi32(b, 8 * k + 2), 0xCA), m63);
    }
    for (int m = 0; m < 4; ++m) o->mn[m] = _mm512_or_si512(mn[2 * m], _mm512_slli_epi32(mn[2 * m + 1], 16));
}

// Half h of the packed nibbles (qs bytes 64h .. 64h + 63) of 16 rows: r[e] = qs dword 16h + e.
inline void rowlane_raw_half(const BlockQ4K* const* rows, int h, __m512i* r) {
    for (int i = 0; i < ROWLANE_ROWS; ++i) r[i] = _mm512_loadu_si512(rows[i]->qs + 64 * h);
    transpose16(r);
}

inline void rowlane_decode(const BlockQ4K* const* rows, RowlaneQ4K* o) {
    rowlane_decode_scales(rows, o);
    rowlane_raw_half(rows, 0, o->raw);
    rowlane_raw_half(rows, 1, o->raw + 16);
}

// A chunk's records, interleaved: dword p of block b of record t at xq[b][p][t], so the broadcasts of
// one step share a cache line and one pointer serves them all (docs/perf/2026-11-30-avx512-kernels.md#rowlane-acts).
// xs[b][m][t]: the int16 sums of 32-element sub-blocks 2m, 2m + 1 as one dword (the
// mins' partner in vpdpwssd); x32[b][j][t] (Q6_K) the offset S_j starts from; dx[b][t]: the block scales.
struct RowlaneActs {
    alignas(64) int32_t xq[ROWLANE_MAX_KBLOCKS][QK_K / 4][ROWLANE_CHUNK];
    alignas(64) uint32_t xs[ROWLANE_MAX_KBLOCKS][4][ROWLANE_CHUNK];
    alignas(64) int32_t x32[ROWLANE_MAX_KBLOCKS][QK_K / 16][ROWLANE_CHUNK];  // Q6_K: -32 * sum of 16-element sub-block j
    alignas(64) float dx[ROWLANE_MAX_KBLOCKS][ROWLANE_CHUNK];
};

template <typename Block>
inline void rowlane_acts(const uint8_t* acts, const ActLayout& L, int64_t nb, int t0, int nt, RowlaneActs* a) {
    for (int t = 0; t < nt; ++t) {
        const uint8_t* rec = acts + static_cast<int64_t>(t0 + t) * L.stride;
        const int16_t* s16 = reinterpret_cast<const int16_t*>(rec + L.sums_off);
        const float* d = reinterpret_cast<const float*>(rec + L.d_off);
        for (int64_t b = 0; b < nb; ++b) {
            for (int p = 0; p < QK_K / 4; ++p) std::memcpy(&a->xq[b][p][t], rec + QK_K * b + 4 * p, 4);
            if constexpr (std::is_same<Block, BlockQ6K>::value) {
                for (int j = 0; j < QK_K / 16; ++j) a->x32[b][j][t] = -32 * s16[16 * b + j];
            } else {
                for (int m = 0; m < 4; ++m) {
                    const int16_t* q = s16 + 16 * b + 4 * m;
                    a->xs[b][m][t] = static_cast<uint16_t>(q[0] + q[1]) | (uint32_t(static_cast<uint16_t>(q[2] + q[3])) << 16);
                }
            }
            a->dx[b][t] = d[b];
        }
    }
}

// Sub-block j (0..7) for NR records: S_j from the 8 packed-nibble dwords q[0..7] that hold it (low
// nibbles for even j, high for odd), then i1 += sc_j S_j.
template <int NR>
inline void rowlane_sub(const __m512i* q, int j, __m512i sc, const RowlaneActs& a, int64_t b, __m512i* i1) {
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    __m512i s[NR];
    for (int t = 0; t < NR; ++t) s[t] = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int p = 0; p < 8; ++p) {
        const __m512i v = _mm512_and_si512(j % 2 ? _mm512_srli_epi16(q[p], 4) : q[p], m4);
        const int32_t* xp = a.xq[b][8 * j + p];
        for (int t = 0; t < NR; ++t) s[t] = dpbusd_bcast(s[t], v, xp + t);
    }
    for (int t = 0; t < NR; ++t) i1[t] = _mm512_add_epi32(i1[t], _mm512_mullo_epi32(s[t], sc));
}

// The block's float steps for NR records, in the canonical order: acc += (dw dx) i1, acc -= (dm dx) i2.
template <int NR>
inline void rowlane_finish(const RowlaneQ4K& w, const RowlaneActs& a, int64_t b, const __m512i* i1, __m512* acc) {
    for (int t = 0; t < NR; ++t) {
        __m512i i2 = _mm512_setzero_si512();
        for (int m = 0; m < 4; ++m) i2 = _mm512_dpwssd_epi32(i2, w.mn[m], _mm512_set1_epi32(static_cast<int>(a.xs[b][m][t])));
        const __m512 d = _mm512_set1_ps(a.dx[b][t]);
        acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(w.dw, d), _mm512_cvtepi32_ps(i1[t]), acc[t]);
        acc[t] = _mm512_fnmadd_ps(_mm512_mul_ps(w.dm, d), _mm512_cvtepi32_ps(i2), acc[t]);
    }
}

// One decoded block against NR records (block b of a chunk's RowlaneActs).
template <int NR>
inline void rowlane_block(const RowlaneQ4K& w, const RowlaneActs& a, int64_t b, __m512* acc, const RowlaneAhead& ahead) {
    __m512i i1[NR];
    for (int t = 0; t < NR; ++t) i1[t] = _mm512_setzero_si512();
    for (int j = 0; j < 8; ++j) {
        rowlane_prefetch_part(ahead, j, 8);
        rowlane_sub<NR>(w.raw + 8 * (j / 2), j, w.sc[j], a, b, i1);
    }
    rowlane_finish<NR>(w, a, b, i1, acc);
}

// rowlane_block for 1-2 records (one token) with the packed nibbles kept in registers, one half at a time,
// instead of stored in w.raw and loaded again (w holds the scales, mins and d only).
// Measured: docs/perf/2026-11-30-avx512-kernels.md#rowlane-fused
// Calls of up to ROWLANE_ONE_TOKEN_MAX_RECORDS records of Q4_K (one token) take the fused path.
template <typename Block, int N1, int N2>
constexpr bool rowlane_fused() { return std::is_same<Block, BlockQ4K>::value && N2 == 0 && N1 <= ROWLANE_ONE_TOKEN_MAX_RECORDS; }
// Fused calls over rows longer than ROWLANE_NEAR_MIN_KBLOCKS blocks prefetch near (the same 16 rows'
// block b + ROWLANE_NEAR_BLOCKS), not the next group: a 16-row group of such rows outgrows the L1, and
// far prefetches evicted lines before they were used. tuned: docs/perf/2026-11-30-avx512-kernels.md#near-prefetch
constexpr int64_t ROWLANE_NEAR_BLOCKS = 2;

template <int NR>
inline void rowlane_block_fused(const BlockQ4K* const* rows, const RowlaneQ4K& w, const RowlaneActs& a, int64_t b, __m512* acc,
                                const RowlaneAhead& ahead) {
    __m512i i1[NR];
    for (int t = 0; t < NR; ++t) i1[t] = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
        __m512i r[16];
        rowlane_raw_half(rows, h, r);
#pragma GCC unroll 4
        for (int j = 4 * h; j < 4 * h + 4; ++j) {  // unrolled, so that r stays in registers
            rowlane_prefetch_part(ahead, j, 8);
            rowlane_sub<NR>(r + 8 * ((j / 2) % 2), j, w.sc[j], a, b, i1);
        }
    }
    rowlane_finish<NR>(w, a, b, i1, acc);
}

// ---- Q6_K ---------------------------------------------------------------------------------------
// Block b of 16 rows, one row per lane: q[g] = stored values 4g .. 4g + 3 (unsigned 0..63), so sub-block
// j (16 elements) is q[4j .. 4j + 3]; sc[j] its int8 scale, sign-extended.
struct RowlaneQ6K {
    __m512i q[QK_K / 4];
    __m512i sc[QK_K / 16];
    __m512 dw;
};

inline void rowlane_decode(const BlockQ6K* const* rows, RowlaneQ6K* o) {
    __m512i ql[32], qh[16];
    for (int h = 0; h < 2; ++h) {
        for (int i = 0; i < ROWLANE_ROWS; ++i) ql[16 * h + i] = _mm512_loadu_si512(rows[i]->ql + 64 * h);
        transpose16(ql + 16 * h);
    }
    for (int i = 0; i < ROWLANE_ROWS; ++i) qh[i] = _mm512_loadu_si512(rows[i]->qh);
    transpose16(qh);
    // Values 4g .. 4g + 3, h = g / 32, w4 = g % 32: the low (w4 < 16) or high nibbles of ql dword
    // 16h + w4 % 16, and bits 2k, 2k + 1 (k = w4 / 8) of each byte of qh dword 8h + w4 % 8 as bits 4, 5.
    const __m512i m0f = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
#pragma GCC unroll 64
    for (int g = 0; g < QK_K / 4; ++g) {
        const int h = g / 32, w4 = g % 32, k = w4 / 8;
        const __m512i lo = w4 < 16 ? ql[16 * h + w4] : _mm512_srli_epi32(ql[16 * h + w4 - 16], 4);
        __m512i hi = qh[8 * h + w4 % 8];
        hi = k == 0 ? _mm512_slli_epi32(hi, 4) : k == 1 ? _mm512_slli_epi32(hi, 2) : k == 2 ? hi : _mm512_srli_epi32(hi, 2);
        o->q[g] = _mm512_ternarylogic_epi32(lo, m0f, _mm512_and_si512(hi, m30), 0xEA);  // (lo & m0f) | hi
    }
    // Scales: c[k] lane i = scale bytes 4k .. 4k + 3 of row i.
    const void* p[ROWLANE_ROWS];
    for (int i = 0; i < ROWLANE_ROWS; ++i) p[i] = rows[i]->scales;
    __m512i c[4];
    dwords4_of_rows(p, c);
    for (int k = 0; k < 4; ++k) {
        o->sc[4 * k] = _mm512_srai_epi32(_mm512_slli_epi32(c[k], 24), 24);
        o->sc[4 * k + 1] = _mm512_srai_epi32(_mm512_slli_epi32(c[k], 16), 24);
        o->sc[4 * k + 2] = _mm512_srai_epi32(_mm512_slli_epi32(c[k], 8), 24);
        o->sc[4 * k + 3] = _mm512_srai_epi32(c[k], 24);
    }
    alignas(32) uint16_t d16[ROWLANE_ROWS];
    for (int i = 0; i < ROWLANE_ROWS; ++i) d16[i] = rows[i]->d;
    o->dw = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(d16)));
}

// One decoded Q6_K block against NR records: S_j starts at the record's offset -32 * (sum of x over
// sub-block j), gains 4 vpdpbusd, then i1 += sc_j S_j; acc += (dw dx) i1 (no min term).
template <int NR>
inline void rowlane_block(const RowlaneQ6K& w, const RowlaneActs& a, int64_t b, __m512* acc, const RowlaneAhead& ahead) {
    __m512i i1[NR];
    for (int t = 0; t < NR; ++t) i1[t] = _mm512_setzero_si512();
    for (int j = 0; j < QK_K / 16; ++j) {
        rowlane_prefetch_part(ahead, j, QK_K / 16);
        const __m512i q0 = w.q[4 * j], q1 = w.q[4 * j + 1], q2 = w.q[4 * j + 2], q3 = w.q[4 * j + 3];
        const int32_t(*xp)[ROWLANE_CHUNK] = a.xq[b] + 4 * j;
        for (int t = 0; t < NR; ++t) {
            __m512i s = _mm512_set1_epi32(a.x32[b][j][t]);
            s = dpbusd_bcast(s, q0, &xp[0][t]);
            s = dpbusd_bcast(s, q1, &xp[1][t]);
            s = dpbusd_bcast(s, q2, &xp[2][t]);
            s = dpbusd_bcast(s, q3, &xp[3][t]);
            i1[t] = _mm512_add_epi32(i1[t], _mm512_mullo_epi32(s, w.sc[j]));
        }
    }
    for (int t = 0; t < NR; ++t)
        acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(w.dw, _mm512_set1_ps(a.dx[b][t])), _mm512_cvtepi32_ps(i1[t]), acc[t]);
}

// Q6_K calls take this kernel from ROWLANE_Q6K_MIN_RECORDS records on; below that its 16-row decode (three
// 16x16 transposes and the 6-bit assembly) costs more than it saves against the broadcast and reducing
// kernels. tuned: docs/perf/2026-11-30-avx512-kernels.md#rowlane-q6k-min

template <typename Block> struct RowlaneDecoded;
template <> struct RowlaneDecoded<BlockQ4K> { using type = RowlaneQ4K; };
template <> struct RowlaneDecoded<BlockQ6K> { using type = RowlaneQ6K; };

// How rowlane_rows prefetches: the next row group's share for each block at once (burst) or in slices
// between the sub-blocks' dot products (sliced), or the same rows' block b + ROWLANE_NEAR_BLOCKS (near).
enum class Prefetch { burst, sliced, near };

// Rows [r0, r1) ((r1 - r0) a multiple of 16) against records 0 .. N1 (a1) and N1 .. N1 + N2 (a2, if
// N2 > 0): each decoded block serves both chunks. kFused (one token's Q4_K only): decode and dot
// products fused (rowlane_block_fused).
template <typename Block, int N1, int N2, bool kFused, Prefetch kPf>
void rowlane_rows(const Block* W, int64_t nb, int64_t r0, int64_t r1, const RowlaneActs& a1, const RowlaneActs& a2, float* y,
             int64_t ldy, int pair) {
    static_assert(!kFused || rowlane_fused<Block, N1, N2>(), "the fused path takes one token's Q4_K records");
    typename RowlaneDecoded<Block>::type w;
    for (int64_t rg = r0; rg < r1; rg += ROWLANE_ROWS) {
        __m512 acc[N1 + N2];
        for (int t = 0; t < N1 + N2; ++t) acc[t] = _mm512_setzero_ps();
        for (int64_t b = 0; b < nb; ++b) {
            const Block* rows[ROWLANE_ROWS];
            for (int i = 0; i < ROWLANE_ROWS; ++i) rows[i] = W + (rg + i) * nb + b;
            // The next row group (16 rows, contiguous), in order, one sixteenth-of-a-row's share per
            // block: 16 rows stream at once, too many for the hardware prefetcher to follow alone.
            // Sliced: one slice per sub-block, between the dot products (the lines at once stalled the
            // core on calls of 3+ records). tuned: docs/perf/2026-11-30-avx512-kernels.md#prefetch-slices
            const RowlaneAhead ahead{reinterpret_cast<const char*>(W + (rg + ROWLANE_ROWS) * nb + ROWLANE_ROWS * b),
                                ROWLANE_ROWS * static_cast<int>(sizeof(Block))};
            const RowlaneAhead sliced = kPf == Prefetch::sliced ? ahead : RowlaneAhead{nullptr, 0};
            if constexpr (kPf == Prefetch::near) {
                // Block b + ROWLANE_NEAR_BLOCKS of the same 16 rows; past the row's end the next group's first
                // blocks (rows up to r1 only). Blocks are not line-aligned (144 bytes, 3 or 4 lines), so
                // each row's lines are counted from its block's first byte. Written out here: GCC 12 marked
                // a helper made only of prefetches "const" and deleted its call as dead code.
                int64_t tb = b + ROWLANE_NEAR_BLOCKS, tg = rg;
                if (tb >= nb) {
                    tb -= nb;
                    tg += ROWLANE_ROWS;
                }
                if (tg < r1)
                    for (int i = 0; i < ROWLANE_ROWS; ++i) {
                        const uintptr_t p = reinterpret_cast<uintptr_t>(W + (tg + i) * nb + tb);
                        for (uintptr_t l = p & ~uintptr_t(63); l < p + sizeof(Block); l += 64)
                            _mm_prefetch(reinterpret_cast<const char*>(l), _MM_HINT_T0);
                    }
            } else if constexpr (kPf == Prefetch::burst) {
                rowlane_prefetch_part(ahead, 0, 1);
            }
            if constexpr (kFused) {
                rowlane_decode_scales(rows, &w);
                rowlane_block_fused<N1>(rows, w, a1, b, acc, sliced);
            } else {
                rowlane_decode(rows, &w);
                rowlane_block<N1>(w, a1, b, acc, sliced);
                if constexpr (N2 > 0) rowlane_block<N2>(w, a2, b, acc + N1, RowlaneAhead{nullptr, 0});
            }
        }
        for (int t = 0; t < N1 + N2; t += pair) {
            const __m512 v = pair == 2 ? _mm512_add_ps(acc[t], acc[t + 1]) : acc[t];
            _mm512_storeu_ps(y + static_cast<int64_t>(t / pair) * ldy + rg, v);
        }
    }
}

// mode (plan.h RowlaneMode) picks the one-token form; other calls have one form: unfused, the prefetch
// sliced but for 6 records (a burst).
template <typename Block, int N1, int N2 = 0>
void rowlane_call(const Block* W, int64_t nb, int64_t r0, int64_t r1, const uint8_t* acts, const ActLayout& L, float* y,
             int64_t ldy, int pair, RowlaneMode mode) {
    RowlaneActs a1, a2;
    rowlane_acts<Block>(acts, L, nb, 0, N1, &a1);
    if constexpr (N2 > 0) rowlane_acts<Block>(acts, L, nb, N1, N2, &a2);
    const auto run = [&](auto fused, auto pf) {
        rowlane_rows<Block, N1, N2, decltype(fused)::value, decltype(pf)::value>(W, nb, r0, r1, a1, a2, y, ldy, pair);
    };
    using Near = std::integral_constant<Prefetch, Prefetch::near>;
    using Burst = std::integral_constant<Prefetch, Prefetch::burst>;
    using Sliced = std::integral_constant<Prefetch, Prefetch::sliced>;
    if constexpr (rowlane_fused<Block, N1, N2>()) {
        if (mode == RowlaneMode::plan) mode = nb > ROWLANE_NEAR_MIN_KBLOCKS ? RowlaneMode::fused_near : RowlaneMode::fused_next;
        switch (mode) {
            case RowlaneMode::unfused: return run(std::false_type{}, Sliced{});
            case RowlaneMode::fused_near: return run(std::true_type{}, Near{});
            case RowlaneMode::fused_sliced: return run(std::true_type{}, Sliced{});
            default: return run(std::true_type{}, Burst{});
        }
    } else if constexpr (N1 + N2 == 6) {
        run(std::false_type{}, Burst{});
    } else {
        run(std::false_type{}, Sliced{});
    }
}

// Q4_K takes every even size and 1-8; Q6_K only its sizes from ROWLANE_Q6K_MIN_RECORDS on (no instances of the
// others). Odd 9-15 (single-precision calls) are left to the broadcast kernel.
template <typename Block>
bool rowlane_sizes(const Block* Wb, int64_t nb, int64_t r0, int64_t r16, const uint8_t* acts, const ActLayout& L, int n_rec,
                 float* y, int64_t ldy, int pair, RowlaneMode mode) {
    static_assert(ROWLANE_Q6K_MIN_RECORDS == 12, "the Q6_K cases below");
    if constexpr (std::is_same<Block, BlockQ4K>::value) {
        switch (n_rec) {
            case 1: rowlane_call<Block, 1>(Wb, nb, r0, r16, acts, L, y, ldy, pair, mode); return true;
            case 2: rowlane_call<Block, 2>(Wb, nb, r0, r16, acts, L, y, ldy, pair, mode); return true;
            case 3: rowlane_call<Block, 3>(Wb, nb, r0, r16, acts, L, y, ldy, pair, mode); return true;
            case 4: rowlane_call<Block, 4>(Wb, nb, r0, r16, acts, L, y, ldy, pair, mode); return true;
            case 5: rowlane_call<Block, 5>(Wb, nb, r0, r16, acts, L, y, ldy, pair, mode); return true;
            case 6: rowlane_call<Block, 6>(Wb, nb, r0, r16, acts, L, y, ldy, pair, mode); return true;
            case 7: rowlane_call<Block, 7>(Wb, nb, r0, r16, acts, L, y, ldy, pair, mode); return true;
            case 8: rowlane_call<Block, 8>(Wb, nb, r0, r16, acts, L, y, ldy, pair, mode); return true;
            case 10: rowlane_call<Block, 8, 2>(Wb, nb, r0, r16, acts, L, y, ldy, pair, mode); return true;
            default: break;
        }
    }
    switch (n_rec) {
        case 12: rowlane_call<Block, 8, 4>(Wb, nb, r0, r16, acts, L, y, ldy, pair, mode); return true;
        case 14: rowlane_call<Block, 8, 6>(Wb, nb, r0, r16, acts, L, y, ldy, pair, mode); return true;
        case 16: rowlane_call<Block, 8, 8>(Wb, nb, r0, r16, acts, L, y, ldy, pair, mode); return true;
        default: return false;
    }
}

}  // namespace

int64_t rowlane_kquant(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec,
                       float* y, int64_t ldy, int pair, RowlaneMode mode) {
    const int64_t nb = K / QK_K;
    const int64_t r16 = r0 + (r1 - r0) / ROWLANE_ROWS * ROWLANE_ROWS;
    if (r16 == r0) return r0;
    const ActLayout L = act_layout(wt, K);
    if (wt == GGMLType::Q4_K)
        return rowlane_sizes(reinterpret_cast<const BlockQ4K*>(W), nb, r0, r16, acts, L, n_rec, y, ldy, pair, mode) ? r16 : r0;
    if (wt == GGMLType::Q6_K)
        return rowlane_sizes(reinterpret_cast<const BlockQ6K*>(W), nb, r0, r16, acts, L, n_rec, y, ldy, pair, mode) ? r16 : r0;
    return r0;
}

}  // namespace lg::quant::avx512

#endif

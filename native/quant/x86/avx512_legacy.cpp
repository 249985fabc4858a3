// x86 AVX-512 row-lane kernel for legacy 32-blocks (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) and calls of up to
// ROWLANE_MAX_RECORDS records (decode, verification): 16 weight rows per zmm, activation bytes broadcast,
// float steps 16 rows at a time in the canonical lanes. Bit-identical to the other kernels. Knows nothing
// about threads or models.
#include "quant/x86/avx512.h"

#if LG_SIMD_AVX512

namespace lg::quant::avx512 {

// ---- legacy 32-blocks (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) -----------------------------------------
// A group of up to 8 blocks: q[z] holds blocks 2z, 2z+1 as unsigned values (32 each, element
// order), so that dpbusd with the activations gives per-block partials in reduce_pairs form.
struct LegacyGroup {
    __m512i q[4];
    __m256 dw, dm;
};

template <GGMLType WT> struct LegacyBlock;
template <> struct LegacyBlock<GGMLType::Q4_0> { using B = BlockQ4_0; static constexpr int off_shift = 3; };
template <> struct LegacyBlock<GGMLType::Q4_1> { using B = BlockQ4_1; static constexpr int off_shift = 0; };
template <> struct LegacyBlock<GGMLType::Q5_0> { using B = BlockQ5_0; static constexpr int off_shift = 4; };
template <> struct LegacyBlock<GGMLType::Q5_1> { using B = BlockQ5_1; static constexpr int off_shift = 0; };
template <> struct LegacyBlock<GGMLType::Q8_0> { using B = BlockQ8_0; static constexpr int off_shift = 7; };

template <typename B>
inline uint64_t qh_pair(const B* b, int i, int n) {  // fifth bits of blocks i, i+1 (if present)
    uint32_t lo, hi = 0;
    std::memcpy(&lo, b[i].qh, 4);
    if (i + 1 < n) std::memcpy(&hi, b[i + 1].qh, 4);
    return lo | (uint64_t(hi) << 32);
}

template <GGMLType WT>
inline void decode_legacy_group(const typename LegacyBlock<WT>::B* b, int n, LegacyGroup* g) {
    alignas(16) uint16_t d[8] = {}, m[8] = {};
    for (int i = 0; i < n; ++i) {
        d[i] = b[i].d;
        if constexpr (WT == GGMLType::Q4_1 || WT == GGMLType::Q5_1) m[i] = b[i].m;
    }
    g->dw = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(d)));
    g->dm = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(m)));
    if constexpr (WT == GGMLType::Q8_0) {
        const __m256i flip = _mm256_set1_epi8(char(0x80));  // int8 w -> uint8 w + 128
        for (int z = 0; z < 4; ++z) {
            __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
            if (2 * z < n) lo = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[2 * z].qs)), flip);
            if (2 * z + 1 < n) hi = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[2 * z + 1].qs)), flip);
            g->q[z] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
        }
    } else {
        const __m512i m4 = _mm512_set1_epi8(0x0f);
        const __m512i order = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);  // [B lo, B hi, B' lo, B' hi]
        for (int h = 0; h < 2; ++h) {
            __m128i c[4];
            for (int i = 0; i < 4; ++i) {
                const int blk = 4 * h + i;
                c[i] = blk < n ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[blk].qs)) : _mm_setzero_si128();
            }
            __m512i z = _mm512_inserti32x4(_mm512_castsi128_si512(c[0]), c[1], 1);
            z = _mm512_inserti32x4(_mm512_inserti32x4(z, c[2], 2), c[3], 3);
            const __m512i lo = _mm512_and_si512(z, m4), hi = _mm512_and_si512(_mm512_srli_epi16(z, 4), m4);
            g->q[2 * h] = _mm512_permutex2var_epi64(lo, order, hi);
            g->q[2 * h + 1] = _mm512_permutex2var_epi64(lo, _mm512_add_epi64(order, _mm512_set1_epi64(4)), hi);
            if constexpr (WT == GGMLType::Q5_0 || WT == GGMLType::Q5_1) {
                const __m512i bit4 = _mm512_set1_epi8(0x10);
                for (int j = 0; j < 2; ++j) {
                    const int blk = 4 * h + 2 * j;
                    if (blk < n)
                        g->q[2 * h + j] = _mm512_or_si512(g->q[2 * h + j], _mm512_maskz_mov_epi8(qh_pair(b, blk, n), bit4));
                }
            }
        }
    }
}

namespace {

// Why: reduce_legacy_rows (avx512.cpp) reduces 16 lanes per (row, record, 8 blocks) and folds per row.
// Here each decoded block of 16 rows serves every record through vpdpbusd with the record's bytes
// broadcast, and (row, record) keeps its L_LANES float accumulators in the canonical order of
// blocks.h (block b into lane b % L_LANES, folded pairwise at the end), so the bits are the
// scalar path's. Values are unsigned in the zmm (stored value, plus 128 for Q8_0), so i1 = sum v x minus
// (sum x) << off_shift, as in reduce_legacy_rows.
struct RowlaneLegacy {
    __m512i v[8];  // element group g (values 4g .. 4g + 3) of 16 rows, unsigned
    __m512 dw, dm;
};

template <GGMLType WT>
inline void rowlane_legacy_decode(const typename LegacyBlock<WT>::B* const* rows, RowlaneLegacy* o) {
    alignas(32) uint16_t d[ROWLANE_ROWS], m[ROWLANE_ROWS] = {};
    for (int i = 0; i < ROWLANE_ROWS; ++i) {
        d[i] = rows[i]->d;
        if constexpr (WT == GGMLType::Q4_1 || WT == GGMLType::Q5_1) m[i] = rows[i]->m;
    }
    o->dw = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(d)));
    o->dm = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(m)));
    const void* p[ROWLANE_ROWS];
    if constexpr (WT == GGMLType::Q8_0) {
        for (int i = 0; i < ROWLANE_ROWS; ++i) p[i] = rows[i]->qs;
        dwords4_of_rows(p, o->v);
        for (int i = 0; i < ROWLANE_ROWS; ++i) p[i] = rows[i]->qs + 16;
        dwords4_of_rows(p, o->v + 4);
        const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));  // w + 128, unsigned
        for (int g = 0; g < 8; ++g) o->v[g] = _mm512_xor_si512(o->v[g], flip);
    } else {
        // c[k] lane i = qs dword k of row i: groups k (low nibbles) and 4 + k (high nibbles).
        for (int i = 0; i < ROWLANE_ROWS; ++i) p[i] = rows[i]->qs;
        __m512i c[4];
        dwords4_of_rows(p, c);
        const __m512i m4 = _mm512_set1_epi8(0x0f);
        for (int k = 0; k < 4; ++k) {
            o->v[k] = _mm512_and_si512(c[k], m4);
            o->v[4 + k] = _mm512_and_si512(_mm512_srli_epi16(c[k], 4), m4);
        }
        if constexpr (WT == GGMLType::Q5_0 || WT == GGMLType::Q5_1) {
            // Fifth bit of element e: bit e of the row's qh. Group g's bits 4g .. 4g + 3 sit in byte g / 2 of
            // the lane; byte j of each lane gets it (vpshufb within 128-bit lanes), then bit 4 (g % 2) + j.
            alignas(64) uint32_t qh[ROWLANE_ROWS];
            for (int i = 0; i < ROWLANE_ROWS; ++i) std::memcpy(&qh[i], rows[i]->qh, 4);
            const __m512i q = _mm512_load_si512(qh);
            const __m512i bit4 = _mm512_set1_epi8(0x10);
            for (int g = 0; g < 8; ++g) {
                const char s = static_cast<char>(g / 2);
                const __m128i idx4 = _mm_setr_epi8(s, s, s, s, s + 4, s + 4, s + 4, s + 4, s + 8, s + 8, s + 8, s + 8,
                                                   s + 12, s + 12, s + 12, s + 12);
                const int sh = 4 * (g % 2);
                const __m512i bits = _mm512_set1_epi32(
                    static_cast<int>((1u << sh) | (2u << (sh + 8)) | (4u << (sh + 16)) | (8u << (sh + 24))));
                const __mmask64 hit = _mm512_test_epi8_mask(_mm512_shuffle_epi8(q, _mm512_broadcast_i32x4(idx4)), bits);
                o->v[g] = _mm512_or_si512(o->v[g], _mm512_maskz_mov_epi8(hit, bit4));
            }
        }
    }
}

// One decoded block of 16 rows against one record: lane b % L_LANES of the record's accumulators gains
// the canonical steps.
template <GGMLType WT>
inline void rowlane_legacy_record(const RowlaneLegacy& w, const uint8_t* rec, const ActLayout& L, int64_t b, __m512* lanes) {
    const int32_t* x = reinterpret_cast<const int32_t*>(rec + b * QK32);
    const int16_t sum = reinterpret_cast<const int16_t*>(rec + L.sums_off)[b];
    const __m512 dx = _mm512_set1_ps(reinterpret_cast<const float*>(rec + L.d_off)[b]);
    __m512i i1 = _mm512_setzero_si512();
    for (int g = 0; g < 8; ++g) i1 = dpbusd_bcast(i1, w.v[g], x + g);
    if constexpr (LegacyBlock<WT>::off_shift != 0) i1 = _mm512_sub_epi32(i1, _mm512_set1_epi32(static_cast<int>(sum) << LegacyBlock<WT>::off_shift));
    __m512& lane = lanes[b % L_LANES];
    lane = _mm512_fmadd_ps(_mm512_mul_ps(w.dw, dx), _mm512_cvtepi32_ps(i1), lane);
    if constexpr (WT == GGMLType::Q4_1 || WT == GGMLType::Q5_1)
        lane = _mm512_fmadd_ps(_mm512_mul_ps(w.dm, dx), _mm512_set1_ps(static_cast<float>(sum)), lane);
}

// Rows [r0, r1) ((r1 - r0) a multiple of 16) against n_rec <= ROWLANE_MAX_RECORDS records.
template <GGMLType WT>
void rowlane_legacy_rows(const uint8_t* W, int64_t nb, int64_t r0, int64_t r1, const uint8_t* acts, const ActLayout& L, int n_rec,
              float* y, int64_t ldy, int pair) {
    using B = typename LegacyBlock<WT>::B;
    const B* Wb = reinterpret_cast<const B*>(W);
    RowlaneLegacy w;
    for (int64_t rg = r0; rg < r1; rg += ROWLANE_ROWS) {
        __m512 lanes[ROWLANE_MAX_RECORDS][L_LANES];
        for (int t = 0; t < n_rec; ++t)
            for (int l = 0; l < L_LANES; ++l) lanes[t][l] = _mm512_setzero_ps();
        for (int64_t b = 0; b < nb; ++b) {
            const B* rows[ROWLANE_ROWS];
            for (int i = 0; i < ROWLANE_ROWS; ++i) rows[i] = Wb + (rg + i) * nb + b;
            // The next row group, a sixteenth per block (as the K-quant row-lane kernel does).
            const char* ahead = reinterpret_cast<const char*>(Wb + (rg + ROWLANE_ROWS) * nb + ROWLANE_ROWS * b);
            for (int off = 0; off < ROWLANE_ROWS * static_cast<int>(sizeof(B)); off += 64) _mm_prefetch(ahead + off, _MM_HINT_T0);
            rowlane_legacy_decode<WT>(rows, &w);
            for (int t = 0; t < n_rec; ++t) rowlane_legacy_record<WT>(w, acts + static_cast<int64_t>(t) * L.stride, L, b, lanes[t]);
        }
        for (int t = 0; t < n_rec; t += pair) {
            __m512 out[2];
            for (int u = 0; u < pair; ++u) {  // reduce_lanes' order: (l, l + 4), (l, l + 2), (l, l + 1)
                __m512* l = lanes[t + u];
                for (int k = L_LANES / 2; k >= 1; k /= 2)
                    for (int i = 0; i < k; ++i) l[i] = _mm512_add_ps(l[i], l[i + k]);
                out[u] = l[0];
            }
            _mm512_storeu_ps(y + static_cast<int64_t>(t / pair) * ldy + rg, pair == 2 ? _mm512_add_ps(out[0], out[1]) : out[0]);
        }
    }
}

template <GGMLType WT>
int64_t rowlane_legacy_call(const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec, float* y, int64_t ldy,
                 int pair) {
    const int64_t r16 = r0 + (r1 - r0) / ROWLANE_ROWS * ROWLANE_ROWS;
    if (r16 > r0) rowlane_legacy_rows<WT>(W, K / QK32, r0, r16, acts, act_layout(WT, K), n_rec, y, ldy, pair);
    return r16;
}

// ---- reducing kernel ---------------------------------------------------------------------------
template <GGMLType WT, int NT>
void reduce_legacy_row(const typename LegacyBlock<WT>::B* row, int64_t nb, const uint8_t* const* rec, const ActLayout& L,
                float* out) {
    constexpr bool kMin = WT == GGMLType::Q4_1 || WT == GGMLType::Q5_1;
    __m256 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t g0 = 0; g0 < nb; g0 += L_LANES) {
        const int n = nb - g0 < L_LANES ? static_cast<int>(nb - g0) : L_LANES;
        const __mmask8 lanes = static_cast<__mmask8>((1u << n) - 1);
        LegacyGroup g;
        decode_legacy_group<WT>(row + g0, n, &g);
        for (int t = 0; t < NT; ++t) {
            const int8_t* xq = reinterpret_cast<const int8_t*>(rec[t]) + g0 * QK32;
            __m512i part[4];
            for (int z = 0; z < 4; ++z) {
                const int nbytes = n - 2 * z >= 2 ? 64 : n - 2 * z == 1 ? 32 : 0;
                const __mmask64 mk = nbytes == 64 ? ~0ull : nbytes == 32 ? 0xffffffffull : 0ull;
                part[z] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), g.q[z], _mm512_maskz_loadu_epi8(mk, xq + 64 * z));
            }
            __m256i i1 = reduce_pairs(part);
            const __m256i sums = _mm256_cvtepi16_epi32(
                _mm_maskz_loadu_epi16(lanes, reinterpret_cast<const int16_t*>(rec[t] + L.sums_off) + g0));
            if constexpr (LegacyBlock<WT>::off_shift != 0)  // values were stored as v + 2^off_shift
                i1 = _mm256_sub_epi32(i1, _mm256_slli_epi32(sums, LegacyBlock<WT>::off_shift));
            const __m256 dx = _mm256_maskz_loadu_ps(lanes, reinterpret_cast<const float*>(rec[t] + L.d_off) + g0);
            acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(g.dw, dx), _mm256_cvtepi32_ps(i1), acc[t]);
            if constexpr (kMin) acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(g.dm, dx), _mm256_cvtepi32_ps(sums), acc[t]);
        }
    }
    for (int t = 0; t < NT; ++t) {  // fold lanes (l, l+4), (l, l+2), (l, l+1)
        __m128 a = _mm_add_ps(_mm256_castps256_ps128(acc[t]), _mm256_extractf128_ps(acc[t], 1));
        a = _mm_add_ps(a, _mm_movehl_ps(a, a));
        a = _mm_add_ss(a, _mm_shuffle_ps(a, a, 1));
        out[t] = _mm_cvtss_f32(a);
    }
}

template <GGMLType WT>
void reduce_legacy_rows(const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec, float* y,
                   int64_t ldy, int pair) {
    using B = typename LegacyBlock<WT>::B;
    const int64_t nb = K / QK32;
    const ActLayout L = act_layout(WT, K);
    float out[R_TILE];
    const uint8_t* rec[R_TILE];
    for (int t0 = 0; t0 < n_rec; t0 += R_TILE) {
        const int nt = n_rec - t0 < R_TILE ? n_rec - t0 : R_TILE;
        for (int t = 0; t < nt; ++t) rec[t] = acts + static_cast<int64_t>(t0 + t) * L.stride;
        for (int64_t r = r0; r < r1; ++r) {
            const B* row = reinterpret_cast<const B*>(W) + r * nb;
            switch (nt) {
                case 1: reduce_legacy_row<WT, 1>(row, nb, rec, L, out); break;
                case 2: reduce_legacy_row<WT, 2>(row, nb, rec, L, out); break;
                case 3: reduce_legacy_row<WT, 3>(row, nb, rec, L, out); break;
                case 4: reduce_legacy_row<WT, 4>(row, nb, rec, L, out); break;
                case 5: reduce_legacy_row<WT, 5>(row, nb, rec, L, out); break;
                case 6: reduce_legacy_row<WT, 6>(row, nb, rec, L, out); break;
                case 7: reduce_legacy_row<WT, 7>(row, nb, rec, L, out); break;
                default: reduce_legacy_row<WT, 8>(row, nb, rec, L, out); break;
            }
            store_out(y, ldy, r, t0, out, nt, pair);
        }
    }
}

// ---- broadcast kernel --------------------------------------------------------------------------
// Broadcast kernel for legacy types without a min (Q4_0, Q5_0, Q8_0), 12+ records: as for K-quants,
// 16 vectors per zmm and broadcast weights, so no per-block lane reductions. Per block b of 32:
// i1 = sum u x - 2^off_shift * sum x (u the stored unsigned values), exact in int32; then the canonical
// float steps: lane b % 8 += (dw_b * dx_b) * i1, and the 8 lanes fold (l, l+4), (l, l+2), (l, l+1).
constexpr int BROADCAST_LEGACY_ROWS = 2;

struct BroadcastLegacyTile {  // views into the caller's stack buffer, sized by the call's nb (broadcast_legacy_carve)
    uint32_t (*xq)[16];
    float (*dx)[16];
    int32_t (*xoff)[16];  // -2^off_shift * (sum of the block's 32 values)
};

constexpr int64_t broadcast_legacy_tile_bytes(int64_t nb) { return nb * (QK32 / 4) * 64 + 2 * nb * 64; }

inline BroadcastLegacyTile broadcast_legacy_carve(uint8_t*& p, int64_t nb) {
    BroadcastLegacyTile t{};
    t.xq = reinterpret_cast<uint32_t(*)[16]>(p);
    p += nb * (QK32 / 4) * 64;
    t.dx = reinterpret_cast<float(*)[16]>(p);
    p += nb * 64;
    t.xoff = reinterpret_cast<int32_t(*)[16]>(p);
    p += nb * 64;
    return t;
}

inline void broadcast_legacy_build_tile(const uint8_t* acts, const ActLayout& L, int64_t nb, int t0, int nt, int off_shift,
                          BroadcastLegacyTile* tile) {
    transpose_records(acts, L.stride, t0, nt, nb * QK32 / 4, tile->xq);
    for (int t = 0; t < 16; ++t) {
        if (t >= nt) {
            for (int64_t b = 0; b < nb; ++b) tile->dx[b][t] = 0.0f, tile->xoff[b][t] = 0;
            continue;
        }
        const uint8_t* rec = acts + static_cast<int64_t>(t0 + t) * L.stride;
        const float* d = reinterpret_cast<const float*>(rec + L.d_off);
        const int16_t* s16 = reinterpret_cast<const int16_t*>(rec + L.sums_off);
        for (int64_t b = 0; b < nb; ++b) {
            tile->dx[b][t] = d[b];
            tile->xoff[b][t] = -(static_cast<int32_t>(s16[b]) * (1 << off_shift));
        }
    }
}

// One row's group of up to L_LANES decoded blocks: stored values in block order and block scales.
struct BroadcastLegacyGroup {
    alignas(64) uint8_t q[L_LANES * QK32];
    alignas(32) float dw[L_LANES];
};

// Blocks g0 .. g0 + n of BROADCAST_LEGACY_ROWS rows (dq[i], decoded) against one tile: acc[i][j] gains block g0 + j.
template <GGMLType WT>
inline void broadcast_legacy_group(const BroadcastLegacyGroup* dq, const BroadcastLegacyTile& tile, int64_t g0, int n, __m512 (*acc)[L_LANES]) {
    constexpr bool kOff = LegacyBlock<WT>::off_shift != 0;
    for (int j = 0; j < n; ++j) {
        const int64_t b = g0 + j;
        __m512i s[BROADCAST_LEGACY_ROWS][2];
        for (int i = 0; i < BROADCAST_LEGACY_ROWS; ++i) {
            s[i][0] = kOff ? _mm512_load_si512(tile.xoff[b]) : _mm512_setzero_si512();
            s[i][1] = _mm512_setzero_si512();
        }
        for (int gq = 0; gq < QK32 / 4; ++gq) {
            const __m512i xv = _mm512_load_si512(tile.xq[b * (QK32 / 4) + gq]);
            for (int i = 0; i < BROADCAST_LEGACY_ROWS; ++i) {
                int wv;
                std::memcpy(&wv, dq[i].q + QK32 * j + 4 * gq, 4);
                s[i][gq & 1] = _mm512_dpbusd_epi32(s[i][gq & 1], _mm512_set1_epi32(wv), xv);
            }
        }
        const __m512 dx = _mm512_load_ps(tile.dx[b]);
        for (int i = 0; i < BROADCAST_LEGACY_ROWS; ++i)
            acc[i][j] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(dq[i].dw[j]), dx),
                                        _mm512_cvtepi32_ps(_mm512_add_epi32(s[i][0], s[i][1])), acc[i][j]);
    }
}

template <GGMLType WT>
inline void broadcast_legacy_decode_rows(const typename LegacyBlock<WT>::B* W, int64_t nb, int64_t rg, int nr, int64_t g0, int n,
                           BroadcastLegacyGroup* dq) {
    for (int i = 0; i < BROADCAST_LEGACY_ROWS; ++i) {
        LegacyGroup g;
        decode_legacy_group<WT>(W + (rg + (i < nr ? i : 0)) * nb + g0, n, &g);
        for (int z = 0; z < 4; ++z) _mm512_store_si512(dq[i].q + 64 * z, g.q[z]);
        _mm256_store_ps(dq[i].dw, g.dw);
    }
}

// Rows [r0, r1) against tiles[k], k < n_tiles (vectors t0 + 16 k ..; the last tile holds nt_last). As in
// broadcast_rows, several tiles share one decode of each row pair's blocks (dec: the decoded groups, when
// n_tiles > 1); kept out of line like broadcast_rows. Measured (0.5B, whose Q5_0/Q8_0 matrices take this
// kernel; logits bit-identical): a 32-token forward 0.698 of the time (separate processes, rotated, 4
// rounds); prefill of 512 tokens 359-360 -> 372-383 tok/s; 8 tokens (one tile) 1.009. (With the tiles as
// views into BROADCAST_STACK_BYTES instead of fixed-size arrays, 1.039 of that 32-token time.)
template <GGMLType WT>
__attribute__((noinline)) void broadcast_legacy_rows(const typename LegacyBlock<WT>::B* W, int64_t nb, int64_t r0, int64_t r1,
                                       const BroadcastLegacyTile* tiles, int n_tiles, int t0, int nt_last, BroadcastLegacyGroup (*dec)[BROADCAST_LEGACY_ROWS],
                                       float* y, int64_t ldy, int pair) {
    for (int64_t rg = r0; rg < r1; rg += BROADCAST_LEGACY_ROWS) {
        const int nr = r1 - rg < BROADCAST_LEGACY_ROWS ? static_cast<int>(r1 - rg) : BROADCAST_LEGACY_ROWS;
        auto sweep = [&](const BroadcastLegacyTile& tile, int tt0, int nt, auto&& group_of) {
            __m512 acc[BROADCAST_LEGACY_ROWS][L_LANES];
            for (int i = 0; i < BROADCAST_LEGACY_ROWS; ++i)
                for (int l = 0; l < L_LANES; ++l) acc[i][l] = _mm512_setzero_ps();
            for (int64_t g0 = 0; g0 < nb; g0 += L_LANES) {
                const int n = nb - g0 < L_LANES ? static_cast<int>(nb - g0) : L_LANES;
                broadcast_legacy_group<WT>(group_of(g0, n), tile, g0, n, acc);
            }
            for (int i = 0; i < nr; ++i) {
                __m512* a = acc[i];
                for (int w = L_LANES / 2; w >= 1; w /= 2)
                    for (int l = 0; l < w; ++l) a[l] = _mm512_add_ps(a[l], a[l + w]);
                alignas(64) float tmp[16];
                _mm512_store_ps(tmp, a[0]);
                store_out(y, ldy, rg + i, tt0, tmp, nt, pair);
            }
        };
        if (n_tiles == 1) {
            BroadcastLegacyGroup dq[BROADCAST_LEGACY_ROWS];
            sweep(tiles[0], t0, nt_last, [&](int64_t g0, int n) {
                broadcast_legacy_decode_rows<WT>(W, nb, rg, nr, g0, n, dq);
                return static_cast<const BroadcastLegacyGroup*>(dq);
            });
        } else {
            for (int64_t g0 = 0; g0 < nb; g0 += L_LANES)
                broadcast_legacy_decode_rows<WT>(W, nb, rg, nr, g0, nb - g0 < L_LANES ? static_cast<int>(nb - g0) : L_LANES, dec[g0 / L_LANES]);
            for (int k = 0; k < n_tiles; ++k)
                sweep(tiles[k], t0 + 16 * k, k + 1 == n_tiles ? nt_last : 16,
                      [&](int64_t g0, int) { return static_cast<const BroadcastLegacyGroup*>(dec[g0 / L_LANES]); });
        }
    }
}

template <GGMLType WT>
void broadcast_legacy_call(const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec, float* y, int64_t ldy,
               int pair) {
    const int64_t nb = K / QK32;
    const ActLayout L = act_layout(WT, K);
    static_assert(broadcast_legacy_tile_bytes(BROADCAST_LEGACY_MAX_BLOCKS) <= BROADCAST_STACK_BYTES, "one tile of the largest K fits");
    alignas(64) uint8_t buf[BROADCAST_STACK_BYTES];
    const int64_t n_groups = (nb + L_LANES - 1) / L_LANES;
    const int TG = tiles_per_decode((n_rec + 15) / 16, broadcast_legacy_tile_bytes(nb), n_groups * BROADCAST_LEGACY_ROWS * static_cast<int64_t>(sizeof(BroadcastLegacyGroup)));
    uint8_t* p = buf;
    BroadcastLegacyTile tiles[BROADCAST_TILE_GROUP];
    for (int k = 0; k < TG; ++k) tiles[k] = broadcast_legacy_carve(p, nb);
    auto* dec = TG > 1 ? reinterpret_cast<BroadcastLegacyGroup(*)[BROADCAST_LEGACY_ROWS]>(p) : nullptr;
    for (int k0 = 0; k0 * 16 < n_rec; k0 += TG) {
        int n = 0, nt_last = 16;
        for (; n < TG && (k0 + n) * 16 < n_rec; ++n) {
            const int t0 = (k0 + n) * 16;
            nt_last = n_rec - t0 < 16 ? n_rec - t0 : 16;
            broadcast_legacy_build_tile(acts, L, nb, t0, nt_last, LegacyBlock<WT>::off_shift, &tiles[n]);
        }
        broadcast_legacy_rows<WT>(reinterpret_cast<const typename LegacyBlock<WT>::B*>(W), nb, r0, r1, tiles, n, k0 * 16, nt_last, dec, y,
                    ldy, pair);
    }
}

}  // namespace

int64_t rowlane_legacy(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec,
                              float* y, int64_t ldy, int pair) {
    switch (wt) {
        case GGMLType::Q4_0: return rowlane_legacy_call<GGMLType::Q4_0>(W, K, r0, r1, acts, n_rec, y, ldy, pair);
        case GGMLType::Q4_1: return rowlane_legacy_call<GGMLType::Q4_1>(W, K, r0, r1, acts, n_rec, y, ldy, pair);
        case GGMLType::Q5_0: return rowlane_legacy_call<GGMLType::Q5_0>(W, K, r0, r1, acts, n_rec, y, ldy, pair);
        case GGMLType::Q5_1: return rowlane_legacy_call<GGMLType::Q5_1>(W, K, r0, r1, acts, n_rec, y, ldy, pair);
        case GGMLType::Q8_0: return rowlane_legacy_call<GGMLType::Q8_0>(W, K, r0, r1, acts, n_rec, y, ldy, pair);
        default: return r0;
    }
}

void reduce_legacy(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec,
                   float* y, int64_t ldy, int pair) {
    switch (wt) {
        case GGMLType::Q4_0: reduce_legacy_rows<GGMLType::Q4_0>(W, K, r0, r1, acts, n_rec, y, ldy, pair); break;
        case GGMLType::Q4_1: reduce_legacy_rows<GGMLType::Q4_1>(W, K, r0, r1, acts, n_rec, y, ldy, pair); break;
        case GGMLType::Q5_0: reduce_legacy_rows<GGMLType::Q5_0>(W, K, r0, r1, acts, n_rec, y, ldy, pair); break;
        case GGMLType::Q5_1: reduce_legacy_rows<GGMLType::Q5_1>(W, K, r0, r1, acts, n_rec, y, ldy, pair); break;
        default: reduce_legacy_rows<GGMLType::Q8_0>(W, K, r0, r1, acts, n_rec, y, ldy, pair); break;
    }
}

void broadcast_legacy(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec,
                      float* y, int64_t ldy, int pair) {
    if (wt == GGMLType::Q4_0) broadcast_legacy_call<GGMLType::Q4_0>(W, K, r0, r1, acts, n_rec, y, ldy, pair);
    else if (wt == GGMLType::Q5_0) broadcast_legacy_call<GGMLType::Q5_0>(W, K, r0, r1, acts, n_rec, y, ldy, pair);
    else broadcast_legacy_call<GGMLType::Q8_0>(W, K, r0, r1, acts, n_rec, y, ldy, pair);
}


}  // namespace lg::quant::avx512

#endif

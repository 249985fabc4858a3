// x86 AVX-512 row-lane kernel for legacy 32-blocks (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) and calls of up to
// ROWLANE_MAX_RECORDS records (decode, verification): 16 weight rows per zmm, activation bytes broadcast,
// float steps 16 rows at a time in the canonical lanes. Bit-identical to the other kernels. Knows nothing
// about threads or models.
#include "quant/x86/avx512.h"

#if LG_SIMD_AVX512

namespace lg::quant::avx512 {

namespace {

// Why: reduce_legacy_rows (quant_avx512.cpp) reduces 16 lanes per (row, record, 8 blocks) and folds per row.
// Here each decoded block of 16 rows serves every record through vpdpbusd with the record's bytes
// broadcast, and (row, record) keeps its L_LANES float accumulators in the canonical order of
// quant_blocks.h (block b into lane b % L_LANES, folded pairwise at the end), so the bits are the
// scalar path's. Values are unsigned in the zmm (stored value, plus 128 for Q8_0), so i1 = sum v x minus
// (sum x) << off_shift, as in reduce_legacy_rows.
constexpr int ROWLANE_ROWS = 16;

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

}  // namespace

int64_t rowlane_legacy(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec,
                              float* y, int64_t ldy, int pair) {
    if (n_rec > ROWLANE_MAX_RECORDS) return r0;
    switch (wt) {
        case GGMLType::Q4_0: return rowlane_legacy_call<GGMLType::Q4_0>(W, K, r0, r1, acts, n_rec, y, ldy, pair);
        case GGMLType::Q4_1: return rowlane_legacy_call<GGMLType::Q4_1>(W, K, r0, r1, acts, n_rec, y, ldy, pair);
        case GGMLType::Q5_0: return rowlane_legacy_call<GGMLType::Q5_0>(W, K, r0, r1, acts, n_rec, y, ldy, pair);
        case GGMLType::Q5_1: return rowlane_legacy_call<GGMLType::Q5_1>(W, K, r0, r1, acts, n_rec, y, ldy, pair);
        case GGMLType::Q8_0: return rowlane_legacy_call<GGMLType::Q8_0>(W, K, r0, r1, acts, n_rec, y, ldy, pair);
        default: return r0;
    }
}

}  // namespace lg::quant::avx512

#endif

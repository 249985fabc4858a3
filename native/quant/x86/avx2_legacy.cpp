// x86 AVX2 kernels for legacy 32-blocks (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0). The row-lane kernel: 8 weight rows
// per ymm, activation bytes broadcast, float steps 8 rows at a time in the canonical lane order; the reducing
// kernel takes the rows a group of 8 leaves, one at a time. Both are bit-identical to scalar.cpp.
// Knows nothing about threads or models.
#include <cmath>
#include <cstring>

#include "quant/x86/avx2.h"

#if LG_SIMD_AVX2

namespace lg::quant::avx2 {

namespace {

// ---- legacy row-lane kernel (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) -----------------------------------
// Why: reduce_legacy (below) folds 8 lanes into one integer and runs the float steps in scalar code for
// every (row, record, 32-block). Here a ymm holds 8 rows, one dword lane each, 4 activation bytes are
// broadcast, and the float steps run 8 rows at a time into the canonical per-row lanes acc[b % 8]
// (blocks.h), folded pairwise at the end, so the bits are the scalar path's. Integer bounds:
// 4-5 bit values give maddubs pairs of at most 2 * 31 * 127, four of them summed stay below 2^15; Q8_0
// runs as |w| * (x * sign w), at most 2 * 128 * 127 per pair, so each goes through madd alone.
// Measured (0.5B, mostly Q5_0 with a Q8_0 output matrix; x86-64-v3 build, 2 threads, after 1000 stream
// tokens, alternating per forward in one process, medians of 6, logits bit-identical), reduce_legacy /
// row-lane: T = 1 32.95 / 15.06 ms, T = 2 53.97 / 23.40, T = 4 94.49 / 38.82, T = 8 188.94 / 69.90; prefill of
// 256 tokens 71.9-72.1 / 234.4-236.2 tok/s.
struct RowlaneLegacy {
    __m256i v[8];  // element group g (values 4g .. 4g + 3) of 8 rows, unsigned (Q8_0: |w|)
    __m256i w[8];  // Q8_0: the signed values (for the sign)
    __m256 dw, dm;
};

template <GGMLType WT> struct LegacyBlock;
template <> struct LegacyBlock<GGMLType::Q4_0> { using B = BlockQ4_0; static constexpr int offset = 8; };
template <> struct LegacyBlock<GGMLType::Q4_1> { using B = BlockQ4_1; static constexpr int offset = 0; };
template <> struct LegacyBlock<GGMLType::Q5_0> { using B = BlockQ5_0; static constexpr int offset = 16; };
template <> struct LegacyBlock<GGMLType::Q5_1> { using B = BlockQ5_1; static constexpr int offset = 0; };
template <> struct LegacyBlock<GGMLType::Q8_0> { using B = BlockQ8_0; static constexpr int offset = 0; };

template <GGMLType WT>
inline void rowlane_legacy_decode(const typename LegacyBlock<WT>::B* const* rows, RowlaneLegacy* o) {
    alignas(16) uint16_t d[ROWLANE_ROWS], m[ROWLANE_ROWS] = {};
    for (int i = 0; i < ROWLANE_ROWS; ++i) {
        d[i] = rows[i]->d;
        if constexpr (WT == GGMLType::Q4_1 || WT == GGMLType::Q5_1) m[i] = rows[i]->m;
    }
    o->dw = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(d)));
    o->dm = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(m)));
    if constexpr (WT == GGMLType::Q8_0) {
        for (int i = 0; i < ROWLANE_ROWS; ++i) o->w[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[i]->qs));
        transpose8(o->w);
        for (int g = 0; g < 8; ++g) o->v[g] = _mm256_abs_epi8(o->w[g]);  // -128 -> 0x80, read as unsigned 128
    } else {
        // c[k] lane i = qs dword k of row i: groups k (low nibbles) and 4 + k (high nibbles).
        const void* p[ROWLANE_ROWS];
        for (int i = 0; i < ROWLANE_ROWS; ++i) p[i] = rows[i]->qs;
        __m256i c[4];
        dwords4_of_rows(p, c);
        const __m256i m4 = _mm256_set1_epi8(0x0f);
        for (int k = 0; k < 4; ++k) {
            o->v[k] = _mm256_and_si256(c[k], m4);
            o->v[4 + k] = _mm256_and_si256(_mm256_srli_epi16(c[k], 4), m4);
        }
        if constexpr (WT == GGMLType::Q5_0 || WT == GGMLType::Q5_1) {
            // Fifth bit of element e: bit e of the row's qh. Group g's bits 4g .. 4g + 3 sit in byte g / 2 of
            // the lane; byte j of each lane gets it (vpshufb within 128-bit halves), then bit 4 (g % 2) + j.
            alignas(32) uint32_t qh[ROWLANE_ROWS];
            for (int i = 0; i < ROWLANE_ROWS; ++i) std::memcpy(&qh[i], rows[i]->qh, 4);
            const __m256i q = _mm256_load_si256(reinterpret_cast<const __m256i*>(qh));
            const __m256i bit4 = _mm256_set1_epi8(0x10);
            for (int g = 0; g < 8; ++g) {
                const char s = static_cast<char>(g / 2);
                const __m256i idx = _mm256_setr_epi8(s, s, s, s, s + 4, s + 4, s + 4, s + 4, s + 8, s + 8, s + 8, s + 8, s + 12, s + 12,
                                                     s + 12, s + 12, s, s, s, s, s + 4, s + 4, s + 4, s + 4, s + 8, s + 8, s + 8, s + 8,
                                                     s + 12, s + 12, s + 12, s + 12);
                const int sh = 4 * (g % 2);
                const __m256i bits = _mm256_set1_epi32(static_cast<int>((1u << sh) | (2u << (sh + 8)) | (4u << (sh + 16)) | (8u << (sh + 24))));
                const __m256i hit = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(q, idx), bits), bits);
                o->v[g] = _mm256_or_si256(o->v[g], _mm256_and_si256(hit, bit4));
            }
        }
    }
}

// One decoded block of 8 rows against record t: acc (the row group's 8 lanes of this record) gains the
// canonical steps in lane b % 8.
template <GGMLType WT>
inline void rowlane_legacy_record(const RowlaneLegacy& w, const uint8_t* rec, const ActLayout& L, int64_t b, __m256* lanes) {
    const int8_t* x = reinterpret_cast<const int8_t*>(rec) + b * QK32;
    const int16_t sum = reinterpret_cast<const int16_t*>(rec + L.sums_off)[b];
    const __m256 dx = _mm256_set1_ps(reinterpret_cast<const float*>(rec + L.d_off)[b]);
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i i1;
    if constexpr (WT == GGMLType::Q8_0) {
        i1 = _mm256_setzero_si256();
        for (int g = 0; g < 8; ++g)
            i1 = _mm256_add_epi32(i1, _mm256_madd_epi16(_mm256_maddubs_epi16(w.v[g], _mm256_sign_epi8(bcast4(x + 4 * g), w.w[g])), ones));
    } else {
        __m256i s[2];
        for (int h = 0; h < 2; ++h) {
            const __m256i* v = w.v + 4 * h;
            const int8_t* xh = x + 16 * h;
            s[h] = _mm256_add_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(v[0], bcast4(xh)), _mm256_maddubs_epi16(v[1], bcast4(xh + 4))),
                                    _mm256_add_epi16(_mm256_maddubs_epi16(v[2], bcast4(xh + 8)), _mm256_maddubs_epi16(v[3], bcast4(xh + 12))));
        }
        i1 = _mm256_add_epi32(_mm256_madd_epi16(s[0], ones), _mm256_madd_epi16(s[1], ones));
        if constexpr (LegacyBlock<WT>::offset != 0) i1 = _mm256_sub_epi32(i1, _mm256_set1_epi32(LegacyBlock<WT>::offset * sum));
    }
    __m256& lane = lanes[b % L_LANES];
    lane = _mm256_fmadd_ps(_mm256_mul_ps(w.dw, dx), _mm256_cvtepi32_ps(i1), lane);
    if constexpr (WT == GGMLType::Q4_1 || WT == GGMLType::Q5_1)
        lane = _mm256_fmadd_ps(_mm256_mul_ps(w.dm, dx), _mm256_set1_ps(static_cast<float>(sum)), lane);
}

// Rows [r0, r1) ((r1 - r0) a multiple of 8) against n_rec <= ROWLANE_MAX_RECORDS records.
template <GGMLType WT>
void rowlane_legacy_rows(const uint8_t* W, int64_t nb, int64_t r0, int64_t r1, const uint8_t* acts, const ActLayout& L, int n_rec,
                    float* y, int64_t ldy, int pair) {
    using B = typename LegacyBlock<WT>::B;
    const B* Wb = reinterpret_cast<const B*>(W);
    RowlaneLegacy w;
    for (int64_t rg = r0; rg < r1; rg += ROWLANE_ROWS) {
        __m256 lanes[ROWLANE_MAX_RECORDS][L_LANES];
        for (int t = 0; t < n_rec; ++t)
            for (int l = 0; l < L_LANES; ++l) lanes[t][l] = _mm256_setzero_ps();
        for (int64_t b = 0; b < nb; ++b) {
            const B* rows[ROWLANE_ROWS];
            for (int i = 0; i < ROWLANE_ROWS; ++i) rows[i] = Wb + (rg + i) * nb + b;
            const char* ahead = reinterpret_cast<const char*>(Wb + (rg + ROWLANE_ROWS) * nb + ROWLANE_ROWS * b);  // as in rowlane_rows()
            for (int off = 0; off < ROWLANE_ROWS * static_cast<int>(sizeof(B)); off += 64) _mm_prefetch(ahead + off, _MM_HINT_T0);
            rowlane_legacy_decode<WT>(rows, &w);
            for (int t = 0; t < n_rec; ++t) rowlane_legacy_record<WT>(w, acts + static_cast<int64_t>(t) * L.stride, L, b, lanes[t]);
        }
        for (int t = 0; t < n_rec; t += pair) {
            __m256 out[2];
            for (int u = 0; u < pair; ++u) {  // reduce_lanes' order: (l, l + 4), (l, l + 2), (l, l + 1)
                __m256* l = lanes[t + u];
                for (int k = L_LANES / 2; k >= 1; k /= 2)
                    for (int i = 0; i < k; ++i) l[i] = _mm256_add_ps(l[i], l[i + k]);
                out[u] = l[0];
            }
            _mm256_storeu_ps(y + static_cast<int64_t>(t / pair) * ldy + rg, pair == 2 ? _mm256_add_ps(out[0], out[1]) : out[0]);
        }
    }
}

// Rows in groups of 8, ROWLANE_MAX_RECORDS records (even: pairs stay whole) a pass.
template <GGMLType WT>
int64_t rowlane_legacy_call(const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec, float* y,
                       int64_t ldy, int pair) {
    const int64_t nb = K / QK32, r8 = r0 + (r1 - r0) / ROWLANE_ROWS * ROWLANE_ROWS;
    const ActLayout L = act_layout(WT, K);
    for (int g0 = 0; g0 < n_rec; g0 += ROWLANE_MAX_RECORDS)
        rowlane_legacy_rows<WT>(W, nb, r0, r8, acts + static_cast<int64_t>(g0) * L.stride, L,
                           n_rec - g0 < ROWLANE_MAX_RECORDS ? n_rec - g0 : ROWLANE_MAX_RECORDS, y + static_cast<int64_t>(g0 / pair) * ldy, ldy, pair);
    return r8;
}

// ---- reducing kernel: one row at a time, for the rows a group of 8 leaves ---------------------
// Bit e of qh as 0x10 in byte e.
inline __m256i qh_bytes(uint32_t qh) {
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                            2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bits = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
    __m256i v = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(qh)), spread), bits);
    return _mm256_and_si256(_mm256_cmpeq_epi8(v, bits), _mm256_set1_epi8(0x10));
}

// Block values as unsigned bytes (v + offset), or for Q8_0 the signed values.
inline __m256i legacy_decode(GGMLType wt, const uint8_t* blk, float* dw, float* dm) {
    const LegacyHeader h = legacy_header(wt, blk);
    *dw = _cvtsh_ss(h.d);
    *dm = wt == GGMLType::Q4_1 || wt == GGMLType::Q5_1 ? _cvtsh_ss(h.m) : 0.0f;
    if (wt == GGMLType::Q8_0) return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + h.qs_off));
    const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + h.qs_off));
    const __m128i m4 = _mm_set1_epi8(0x0f);
    __m256i v = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(qs, 4), m4), _mm_and_si128(qs, m4));
    if (wt == GGMLType::Q5_0 || wt == GGMLType::Q5_1) v = _mm256_or_si256(v, qh_bytes(h.qh));
    return v;
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
    const int64_t nb = K / QK32, bb = ggml_bytes_per_block32(wt);
    const bool has_min = wt == GGMLType::Q4_1 || wt == GGMLType::Q5_1;
    const bool q8 = wt == GGMLType::Q8_0;
    const int offset = wt == GGMLType::Q4_0 ? 8 : wt == GGMLType::Q5_0 ? 16 : 0;
    const ActLayout L = act_layout(wt, K);
    const __m256i ones = _mm256_set1_epi16(1);
    for (int t0 = 0; t0 < n_rec; t0 += R_TILE) {
        const int nt = n_rec - t0 < R_TILE ? n_rec - t0 : R_TILE;
        for (int64_t r = r0; r < r1; ++r) {
            const uint8_t* row = W + r * nb * bb;
            float lanes[R_TILE][L_LANES] = {};
            for (int64_t b = 0; b < nb; ++b) {
                float dw, dm;
                const __m256i v = legacy_decode(wt, row + b * bb, &dw, &dm);
                const __m256i av = q8 ? _mm256_sign_epi8(v, v) : v;  // |w| as unsigned for Q8_0
                for (int t = 0; t < nt; ++t) {
                    const uint8_t* rec = acts + static_cast<int64_t>(t0 + t) * L.stride;
                    __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + b * QK32));
                    if (q8) x = _mm256_sign_epi8(x, v);  // w * x = |w| * (x * sign(w))
                    const int16_t sum = reinterpret_cast<const int16_t*>(rec + L.sums_off)[b];
                    const float dx = reinterpret_cast<const float*>(rec + L.d_off)[b];
                    const int32_t i1 = hsum(_mm256_madd_epi16(_mm256_maddubs_epi16(av, x), ones)) - offset * sum;
                    float& lane = lanes[t][b % L_LANES];
                    lane = std::fma(dw * dx, static_cast<float>(i1), lane);
                    if (has_min) lane = std::fma(dm * dx, static_cast<float>(sum), lane);
                }
            }
            float out[R_TILE];
            for (int t = 0; t < nt; ++t) out[t] = reduce_lanes(lanes[t]);
            store_out(y, ldy, r, t0, out, nt, pair);
        }
    }
}

}  // namespace lg::quant::avx2

#endif

// The reducing kernel for one token's Q4_K and Q6_K records (1 or 2: q8 or q8x2), rows in sequence:
// sequential streams of weights, which the hardware prefetcher follows. Fewer instructions per block
// than the general reducing kernel (avx512.cpp), which serves up to 8 records through 8-lane tables:
//  - Q4_K records are rearranged once per call into the nibbles' order (the middle two 32-byte
//    quarters of each 128 swapped), so a block decodes with one AND and one shift per 64 bytes;
//  - the mins term (Q4_K) or the -32 offset's term (Q6_K) is one madd over both records' per-16 sums,
//    laid out so that its lanes fold in the same reduction tree as the scaled dot products;
//  - two rows per pass, from the two halves of the thread's rows (two sequential streams), share the
//    records' loads, the tree's last steps and the float steps.
// Integer block sums are exact, so the result is the scalar path's (blocks.h canonical order).
#include "quant/x86/avx512.h"

#if LG_SIMD_AVX512

namespace lg::quant::avx512 {

namespace {

// Software prefetch distance in bytes of the row sweep (rows are contiguous, so it runs on into the
// next rows). Tuned in the kernel probe of
// docs/perf/2026-12-02-zen4-one-token.md#fifth-session-reduce_one_token-a-reducing-kernel-for-one-tokens-records
constexpr int64_t REDUCE1_PREFETCH_BYTES = 3456;

struct Reduce1Tile {
    alignas(64) int8_t xp[2][REDUCE1_MAX_KBLOCKS * QK_K];  // records; Q4_K: in nibble order
    alignas(64) int16_t bs[REDUCE1_MAX_KBLOCKS][32];       // int16 pair l: record l%2's sums 2(l/2), 2(l/2)+1
    alignas(16) float dx[REDUCE1_MAX_KBLOCKS][4];          // [dx_0, dx_1, dx_0, dx_1]
};

template <typename Block>
void build_tile(const uint8_t* acts, const ActLayout& L, int64_t nb, int nt, Reduce1Tile* tile) {
    constexpr bool kQ4 = std::is_same<Block, BlockQ4K>::value;
    for (int t = 0; t < 2; ++t) {
        const uint8_t* rec = acts + static_cast<int64_t>(t < nt ? t : 0) * L.stride;
        const int16_t* s16 = reinterpret_cast<const int16_t*>(rec + L.sums_off);
        const float* d = reinterpret_cast<const float*>(rec + L.d_off);
        for (int64_t b = 0; b < nb; ++b) {
            // Q4_K: block b's 256 values as quarters 0 2 1 3 of each half (nibble order)
            for (int h = 0; h < 2; ++h) {
                const uint8_t* src = rec + b * QK_K + 128 * h;
                int8_t* dst = tile->xp[t] + b * QK_K + 128 * h;
                std::memcpy(dst, src, 32);
                std::memcpy(dst + 32, src + (kQ4 ? 64 : 32), 32);
                std::memcpy(dst + 64, src + (kQ4 ? 32 : 64), 32);
                std::memcpy(dst + 96, src + 96, 32);
            }
            for (int p = 0; p < 8; ++p)
                for (int j = 0; j < 2; ++j) tile->bs[b][2 * (2 * p + t) + j] = t < nt ? s16[16 * b + 2 * p + j] : 0;
            tile->dx[b][t] = tile->dx[b][2 + t] = t < nt ? d[b] : 0.0f;
        }
    }
}

// Lane tables. Q4_K, over [sc0..7, mn0..7]: the scales of the packed dot
// products of half h, int16 lane 8c + i holding a sum of sub-block 4h + 2(c >= 2) + (i >= 4); the mins,
// lane i pairing with bs's lane i (sub-block i / 4). Q6_K, over its 16 scales: pair h of the packed
// products (values 128h ..), lane 8c + i of sub-block 8h + c + 4(i >= 4); the -32 term, bs's lane i of
// sub-block 2(i / 4) + i % 2.
struct Reduce1Index {
    alignas(64) int8_t bsv[2][64], bmv[64];  // Q4_K: byte-shuffle controls (int16 lanes, high bytes zeroed)
    alignas(64) int16_t sv6[2][32], mv6[32];  // Q6_K: word indices
    Reduce1Index() {
        for (int i = 0; i < 32; ++i) {
            const int c = i / 8, k = i % 8;
            for (int h = 0; h < 2; ++h) {
                bsv[h][2 * i] = int8_t(4 * h + (c >= 2 ? 2 : 0) + (k >= 4 ? 1 : 0)), bsv[h][2 * i + 1] = int8_t(0x80);
                sv6[h][i] = int16_t(8 * h + c + (k >= 4 ? 4 : 0));
            }
            bmv[2 * i] = int8_t(8 + i / 4), bmv[2 * i + 1] = int8_t(0x80);
            mv6[i] = int16_t(2 * (i / 4) + i % 2);
        }
    }
};
const Reduce1Index kIdx;

// The weights of one block as four vectors of unsigned values, in the order of the tile's records.
inline void values(const BlockQ4K& w, __m512i* q) {
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    for (int h = 0; h < 2; ++h) {
        const __m512i z = _mm512_loadu_si512(w.qs + 64 * h);
        q[2 * h] = _mm512_and_si512(z, m4);
        q[2 * h + 1] = _mm512_and_si512(_mm512_srli_epi16(z, 4), m4);
    }
}

inline void values(const BlockQ6K& w, __m512i* q) {
    KBlock k;
    decode(&w, &k);
    for (int i = 0; i < 4; ++i) q[i] = k.q[i];
}

// The block's scales for the lane tables: Q4_K [sc0..7, mn0..7], Q6_K its 16 (int16).
inline __m512i scales16(const BlockQ4K& w) {
    uint64_t sc, mn;
    q4k_unpack(w.scales, &sc, &mn);
    return _mm512_broadcast_i32x4(_mm_set_epi64x(static_cast<long long>(mn), static_cast<long long>(sc)));
}

inline __m512i scales16(const BlockQ6K& w) {
    return _mm512_castsi256_si512(_mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales))));
}

// The lane tables of a Block type, loaded once per call.
template <typename Block>
struct Tables {
    static constexpr bool kQ4 = std::is_same<Block, BlockQ4K>::value;
    __m512i sv0, sv1, mv;
    Tables() {
        sv0 = kQ4 ? _mm512_load_si512(kIdx.bsv[0]) : _mm512_load_si512(kIdx.sv6[0]);
        sv1 = kQ4 ? _mm512_load_si512(kIdx.bsv[1]) : _mm512_load_si512(kIdx.sv6[1]);
        mv = kQ4 ? _mm512_load_si512(kIdx.bmv) : _mm512_load_si512(kIdx.mv6);
    }
    // Q4_K: byte shuffles within 128-bit lanes of the broadcast bytes; Q6_K: word permutes (signed scales)
    static __m512i pick(__m512i idx, __m512i s) { return kQ4 ? _mm512_shuffle_epi8(s, idx) : _mm512_permutexvar_epi16(idx, s); }
};

// Block b of one row: per 128-bit chunk [i1_0, i1_1, m_0, m_1] partials, where m is the mins term (Q4_K)
// or the -32 offset's term (Q6_K), scales times sums.
template <typename Block, int NT>
inline __m512i block_partials(const Block& w, int64_t b, const Reduce1Tile& tile, const Tables<Block>& tb) {
    const char* ahead = reinterpret_cast<const char*>(&w) + REDUCE1_PREFETCH_BYTES;
    for (size_t off = 0; off < sizeof(Block); off += 64) _mm_prefetch(ahead + off, _MM_HINT_T0);
    const __m512i z = _mm512_setzero_si512();
    const __m512i s16 = scales16(w);
    const __m512i sv0 = tb.pick(tb.sv0, s16), sv1 = tb.pick(tb.sv1, s16);
    __m512i q[4];
    values(w, q);
    __m512i ia[2];
    for (int t = 0; t < NT; ++t) {
        // 4-element sums fit int16 (<= 4 * 63 * 128): two packed per scale multiply
        const int8_t* x = tile.xp[t] + b * QK_K;
        const __m512i p0 = _mm512_dpbusd_epi32(z, q[0], _mm512_load_si512(x));
        const __m512i p1 = _mm512_dpbusd_epi32(z, q[1], _mm512_load_si512(x + 64));
        const __m512i p2 = _mm512_dpbusd_epi32(z, q[2], _mm512_load_si512(x + 128));
        const __m512i p3 = _mm512_dpbusd_epi32(z, q[3], _mm512_load_si512(x + 192));
        ia[t] = _mm512_dpwssd_epi32(_mm512_madd_epi16(_mm512_packs_epi32(p0, p1), sv0), _mm512_packs_epi32(p2, p3), sv1);
    }
    if constexpr (NT == 1) ia[1] = z;
    const __m512i m = _mm512_madd_epi16(_mm512_load_si512(tile.bs[b]), tb.pick(tb.mv, s16));
    const __m512i x = _mm512_add_epi32(_mm512_unpacklo_epi32(ia[0], ia[1]), _mm512_unpackhi_epi32(ia[0], ia[1]));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(x, m), _mm512_unpackhi_epi64(x, m));
}

// Rows w0 (and w1 when NR = 2) over all blocks: out[0..1] row 0's two record sums, out[4..5] row 1's.
// The two rows' block sums fold in one tree and share the float steps (a 128-bit lane each).
template <typename Block, int NT, int NR>
inline void row_pair(const Block* w0, const Block* w1, int64_t nb, const Reduce1Tile& tile, float* out) {
    constexpr bool kQ4 = Tables<Block>::kQ4;
    const Tables<Block> tb;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const __m512i y0 = block_partials<Block, NT>(w0[b], b, tile, tb);
        __m256i sums;  // 128-bit lane i: row i's [i1_0, i1_1, m_0, m_1]
        if constexpr (NR == 2) {
            const __m512i y1 = block_partials<Block, NT>(w1[b], b, tile, tb);
            const __m512i u = _mm512_add_epi32(_mm512_shuffle_i64x2(y0, y1, _MM_SHUFFLE(2, 0, 2, 0)),
                                               _mm512_shuffle_i64x2(y0, y1, _MM_SHUFFLE(3, 1, 3, 1)));
            sums = _mm256_add_epi32(_mm512_castsi512_si256(_mm512_shuffle_i64x2(u, u, _MM_SHUFFLE(3, 1, 2, 0))),
                                    _mm512_castsi512_si256(_mm512_shuffle_i64x2(u, u, _MM_SHUFFLE(2, 0, 3, 1))));
        } else {
            const __m256i h = _mm256_add_epi32(_mm512_castsi512_si256(y0), _mm512_extracti64x4_epi64(y0, 1));
            sums = _mm256_castsi128_si256(_mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1)));
        }
        const __m256 dx = _mm256_broadcast_ps(reinterpret_cast<const __m128*>(tile.dx[b]));  // [dx_0, dx_1, dx_0, dx_1] x 2
        if constexpr (kQ4) {
            // [dw, dm] * [dx_0, dx_1]: fma(dw dx, i1, acc), then fma(-(dm dx), i2, acc), per record lane
            uint32_t d0, d1 = 0;
            std::memcpy(&d0, &w0[b].d, 4);
            if constexpr (NR == 2) std::memcpy(&d1, &w1[b].d, 4);
            const __m128 dwm = _mm_cvtph_ps(_mm_set_epi32(0, 0, static_cast<int>(d1), static_cast<int>(d0)));
            const __m256 dd = _mm256_permutexvar_ps(_mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3), _mm256_castps128_ps256(dwm));
            const __m256 s = _mm256_mul_ps(dd, dx);
            const __m256 v = _mm256_cvtepi32_ps(sums);
            acc = _mm256_fmadd_ps(s, v, acc);
            acc = _mm256_fnmadd_ps(_mm256_shuffle_ps(s, s, _MM_SHUFFLE(3, 2, 3, 2)), _mm256_shuffle_ps(v, v, _MM_SHUFFLE(3, 2, 3, 2)),
                                   acc);
        } else {
            const __m256i i1 = _mm256_sub_epi32(sums, _mm256_slli_epi32(_mm256_unpackhi_epi64(sums, sums), 5));  // q - 32
            const __m256 dw = _mm256_set_m128(_mm_set1_ps(NR == 2 ? _cvtsh_ss(w1[b].d) : 0.0f), _mm_set1_ps(_cvtsh_ss(w0[b].d)));
            acc = _mm256_fmadd_ps(_mm256_mul_ps(dw, dx), _mm256_cvtepi32_ps(i1), acc);
        }
    }
    _mm256_storeu_ps(out, acc);
}

template <typename Block, int NT>
void rows_nt(const Block* Wb, int64_t nb, int64_t r0, int64_t r1, const Reduce1Tile& tile, float* y, int64_t ldy, int pair) {
    // Row pairs from the two halves of the range: each half is one sequential stream.
    alignas(32) float out[8];
    const int64_t half = (r1 - r0) / 2, mid = r0 + half;
    for (int64_t i = 0; i < half; ++i) {
        row_pair<Block, NT, 2>(Wb + (r0 + i) * nb, Wb + (mid + i) * nb, nb, tile, out);
        store_out(y, ldy, r0 + i, 0, out, NT, pair);
        store_out(y, ldy, mid + i, 0, out + 4, NT, pair);
    }
    if (mid + half < r1) {
        row_pair<Block, NT, 1>(Wb + (r1 - 1) * nb, nullptr, nb, tile, out);
        store_out(y, ldy, r1 - 1, 0, out, NT, pair);
    }
}

template <typename Block>
void rows(const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec, float* y, int64_t ldy,
          int pair, GGMLType wt) {
    const int64_t nb = K / QK_K;
    Reduce1Tile tile;
    build_tile<Block>(acts, act_layout(wt, K), nb, n_rec, &tile);
    const Block* Wb = reinterpret_cast<const Block*>(W);
    if (n_rec == 1) rows_nt<Block, 1>(Wb, nb, r0, r1, tile, y, ldy, pair);
    else rows_nt<Block, 2>(Wb, nb, r0, r1, tile, y, ldy, pair);
}

}  // namespace

void reduce1_kquant(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec, float* y,
                    int64_t ldy, int pair) {
    if (wt == GGMLType::Q4_K) rows<BlockQ4K>(W, K, r0, r1, acts, n_rec, y, ldy, pair, wt);
    else rows<BlockQ6K>(W, K, r0, r1, acts, n_rec, y, ldy, pair, wt);
}

}  // namespace lg::quant::avx512

#endif

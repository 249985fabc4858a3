// x86 AVX-512 BW+VNNI reducing kernels and the dispatch: bit-identical to scalar.cpp. Integer block
// sums are exact, so only the float steps must follow the canonical order (blocks.h): K-quants
// vectorize them across vectors t, legacy types across their 8 block lanes. Calls of many records go to
// the broadcast kernels (avx512_broadcast.cpp). Knows nothing about threads.
#include <cmath>
#include <type_traits>

#include "quant/x86/avx512.h"

#if LG_SIMD_AVX512

namespace lg::quant::avx512 {

namespace {

// Software prefetch distance of a row sweep, in K-quant blocks (legacy rows: none): a one-token sweep is
// DRAM-bound. tuned: docs/perf/2026-11-30-avx512-kernels.md#prefetch-blocks
constexpr int PREFETCH_BLOCKS = 96;

// ---- integer reductions across t ----------------------------------------------------------
// Sum the 16 int32 lanes of each accumulator; result lane t = sum of a[t] (t < 8).
inline __m256i reduce8(const __m512i a[8]) {
    __m512i b[4];
    for (int i = 0; i < 4; ++i) {
        __m512i u = _mm512_shuffle_i64x2(a[2 * i], a[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0));
        __m512i v = _mm512_shuffle_i64x2(a[2 * i], a[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2));
        b[i] = _mm512_add_epi32(u, v);
    }
    return reduce_pairs(b);
}

template <int NT>
inline __m256i reduce_t(const __m512i* a) {
    if constexpr (NT == 1) {
        return _mm256_castsi128_si256(_mm_cvtsi32_si128(_mm512_reduce_add_epi32(a[0])));
    } else if constexpr (NT == 2) {  // decode with q8x2: lanes 0, 1 (the rest are not read)
        __m512i s = _mm512_add_epi32(_mm512_unpacklo_epi32(a[0], a[1]), _mm512_unpackhi_epi32(a[0], a[1]));
        s = _mm512_add_epi32(s, _mm512_shuffle_epi32(s, _MM_PERM_BADC));           // chunk: [a0, a1, a0, a1]
        s = _mm512_add_epi32(s, _mm512_shuffle_i64x2(s, s, _MM_SHUFFLE(1, 0, 3, 2)));  // chunks k, k+2
        s = _mm512_add_epi32(s, _mm512_shuffle_i64x2(s, s, _MM_SHUFFLE(2, 3, 0, 1)));  // chunks k, k+1
        return _mm512_castsi512_si256(s);
    } else {
        __m512i full[8];
        for (int t = 0; t < 8; ++t) full[t] = t < NT ? a[t] : _mm512_setzero_si512();
        return reduce8(full);
    }
}

}  // namespace

void reduce_build_tile(const uint8_t* acts, const ActLayout& L, int64_t nb, int t0, int nt, ReduceTile* tile) {
    std::memset(tile->dxT, 0, sizeof(float) * R_TILE * nb);
    std::memset(tile->bsT, 0, sizeof(int16_t) * 128 * nb);
    for (int t = 0; t < nt; ++t) {
        const uint8_t* rec = acts + static_cast<int64_t>(t0 + t) * L.stride;
        tile->xq[t] = reinterpret_cast<const int8_t*>(rec);
        const int16_t* s16 = reinterpret_cast<const int16_t*>(rec + L.sums_off);
        const float* d = reinterpret_cast<const float*>(rec + L.d_off);
        for (int64_t b = 0; b < nb; ++b) {
            tile->dxT[b][t] = d[b];
            for (int k = 0; k < 16; ++k) {
                const int kp = k / 2, z = kp / 2, lane = 8 * (kp % 2) + t;
                tile->bsT[b][z][2 * lane + k % 2] = s16[16 * b + k];
            }
        }
    }
    for (int t = nt; t < R_TILE; ++t) tile->xq[t] = tile->xq[0];
}

namespace {

// Lane t: sum over k of s16[k] * (per-16 sums of vector t).
inline __m256i bsdot(const int16_t (*bs)[32], __m256i s16) {
    alignas(64) static const int16_t kIdx[4][32] = {
#define LG_I(z, i) int16_t(2 * (2 * (z) + ((i) / 2) / 8) + (i) % 2)
#define LG_ROW(z) {LG_I(z,0),LG_I(z,1),LG_I(z,2),LG_I(z,3),LG_I(z,4),LG_I(z,5),LG_I(z,6),LG_I(z,7),LG_I(z,8),LG_I(z,9),LG_I(z,10),LG_I(z,11),LG_I(z,12),LG_I(z,13),LG_I(z,14),LG_I(z,15),LG_I(z,16),LG_I(z,17),LG_I(z,18),LG_I(z,19),LG_I(z,20),LG_I(z,21),LG_I(z,22),LG_I(z,23),LG_I(z,24),LG_I(z,25),LG_I(z,26),LG_I(z,27),LG_I(z,28),LG_I(z,29),LG_I(z,30),LG_I(z,31)}
        LG_ROW(0), LG_ROW(1), LG_ROW(2), LG_ROW(3)
#undef LG_ROW
#undef LG_I
    };
    const __m512i s = _mm512_castsi256_si512(s16);
    __m512i acc = _mm512_setzero_si512();
    for (int z = 0; z < 4; ++z) {
        __m512i sv = _mm512_permutexvar_epi16(_mm512_load_si512(kIdx[z]), s);
        acc = _mm512_dpwssd_epi32(acc, _mm512_load_si512(bs[z]), sv);
    }
    return _mm256_add_epi32(_mm512_castsi512_si256(acc), _mm512_extracti64x4_epi64(acc, 1));
}

// Scale vector for the pair q[2m], q[2m+1] after packs_epi32 of their dpbusd sums: int16 lane
// (chunk c, position i) holds the 4-element sum of chunk c of q[2m + i/4], whose per-16 scale
// index is 4 * (2m + i/4) + c.
inline __m512i pair_scale_vec(__m256i s16, int m) {
    alignas(64) static const int16_t kIdx[32] = {0, 0, 0, 0, 4, 4, 4, 4, 1, 1, 1, 1, 5, 5, 5, 5,
                                                 2, 2, 2, 2, 6, 6, 6, 6, 3, 3, 3, 3, 7, 7, 7, 7};
    const __m512i idx = _mm512_add_epi16(_mm512_set1_epi16(short(8 * m)), _mm512_load_si512(kIdx));
    return _mm512_permutexvar_epi16(idx, _mm512_castsi256_si512(s16));
}

// Blocks [b0, b1) of one row into acc (lane t), in block order.
template <typename Block, int NT>
inline __m256 reduce_kquant_blocks(const Block* row, int64_t b0, int64_t b1, const ReduceTile& tile, __m256 acc) {
    constexpr bool kQ6 = std::is_same<Block, BlockQ6K>::value;
    for (int64_t b = b0; b < b1; ++b) {
        // Software prefetch PREFETCH_BLOCKS ahead in the row: when several vectors slow the
        // sweep down, the hardware prefetcher alone leaves long rows DRAM-latency bound.
        const char* ahead = reinterpret_cast<const char*>(row + b + PREFETCH_BLOCKS);
        for (size_t off = 0; off < sizeof(Block); off += 64) _mm_prefetch(ahead + off, _MM_HINT_T0);
        KBlock w;
        decode(row + b, &w);
        const __m512i sv0 = pair_scale_vec(w.sc16, 0), sv1 = pair_scale_vec(w.sc16, 1);
        __m512i ia[NT];
        for (int t = 0; t < NT; ++t) {
            // dpbusd 4-element sums fit int16 (<= 4 * 63 * 127), so two vectors pack into one
            // before the scale multiply: 6 multiplies per t instead of 8.
            const int8_t* xq = tile.xq[t] + b * QK_K;
            const __m512i z = _mm512_setzero_si512();
            __m512i p0 = _mm512_dpbusd_epi32(z, w.q[0], _mm512_loadu_si512(xq));
            __m512i p1 = _mm512_dpbusd_epi32(z, w.q[1], _mm512_loadu_si512(xq + 64));
            __m512i p2 = _mm512_dpbusd_epi32(z, w.q[2], _mm512_loadu_si512(xq + 128));
            __m512i p3 = _mm512_dpbusd_epi32(z, w.q[3], _mm512_loadu_si512(xq + 192));
            __m512i a = _mm512_madd_epi16(_mm512_packs_epi32(p0, p1), sv0);
            ia[t] = _mm512_dpwssd_epi32(a, _mm512_packs_epi32(p2, p3), sv1);
        }
        __m256i i1 = reduce_t<NT>(ia);
        const __m256 dx = _mm256_load_ps(tile.dxT[b]);
        if constexpr (kQ6) {
            i1 = _mm256_sub_epi32(i1, _mm256_slli_epi32(bsdot(tile.bsT[b], w.sc16), 5));  // q - 32
            acc = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(w.dw), dx), _mm256_cvtepi32_ps(i1), acc);
        } else {
            const __m256i i2 = bsdot(tile.bsT[b], w.mn16);
            acc = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(w.dw), dx), _mm256_cvtepi32_ps(i1), acc);
            acc = _mm256_fnmadd_ps(_mm256_mul_ps(_mm256_set1_ps(w.dm), dx), _mm256_cvtepi32_ps(i2), acc);
        }
    }
    return acc;
}

// Rows [r0, r1) x one tile. When the tile's activations outgrow L1_ACT_BYTES, rows are swept in
// chunks of K_CHUNK blocks across ROW_GROUP rows, so the chunk's activations stay in L1 while
// several rows stream past them; each (row, t) still sees its blocks in order.
template <typename Block, int NT>
void reduce_kquant_rows(const Block* W, int64_t nb, int64_t r0, int64_t r1, const ReduceTile& tile, int t0, float* y,
                 int64_t ldy, int pair) {
    constexpr int ROW_GROUP = 4;
    constexpr int64_t L1_ACT_BYTES = 24 << 10;
    const int64_t K_CHUNK = NT * nb * QK_K > L1_ACT_BYTES ? 8 : nb;
    for (int64_t rg = r0; rg < r1; rg += ROW_GROUP) {
        const int nr = r1 - rg < ROW_GROUP ? static_cast<int>(r1 - rg) : ROW_GROUP;
        __m256 acc[ROW_GROUP];
        for (int i = 0; i < ROW_GROUP; ++i) acc[i] = _mm256_setzero_ps();
        for (int64_t c = 0; c < nb; c += K_CHUNK) {
            const int64_t c1 = nb - c < K_CHUNK ? nb : c + K_CHUNK;
            for (int i = 0; i < nr; ++i) acc[i] = reduce_kquant_blocks<Block, NT>(W + (rg + i) * nb, c, c1, tile, acc[i]);
        }
        for (int i = 0; i < nr; ++i) {
            alignas(32) float tmp[8];
            _mm256_store_ps(tmp, acc[i]);
            store_out(y, ldy, rg + i, t0, tmp, NT, pair);
        }
    }
}

// The reducing kernel on a tile of nt <= R_TILE vectors (the broadcast kernel's remainder).
template <typename Block>
void reduce_kquant_rows_n(const Block* W, int64_t nb, int64_t r0, int64_t r1, const ReduceTile& tile, int t0, int nt, float* y,
                   int64_t ldy, int pair) {
    switch (nt) {
        case 1: reduce_kquant_rows<Block, 1>(W, nb, r0, r1, tile, t0, y, ldy, pair); break;
        case 2: reduce_kquant_rows<Block, 2>(W, nb, r0, r1, tile, t0, y, ldy, pair); break;
        case 3: reduce_kquant_rows<Block, 3>(W, nb, r0, r1, tile, t0, y, ldy, pair); break;
        case 4: reduce_kquant_rows<Block, 4>(W, nb, r0, r1, tile, t0, y, ldy, pair); break;
        case 5: reduce_kquant_rows<Block, 5>(W, nb, r0, r1, tile, t0, y, ldy, pair); break;
        case 6: reduce_kquant_rows<Block, 6>(W, nb, r0, r1, tile, t0, y, ldy, pair); break;
        case 7: reduce_kquant_rows<Block, 7>(W, nb, r0, r1, tile, t0, y, ldy, pair); break;
        default: reduce_kquant_rows<Block, 8>(W, nb, r0, r1, tile, t0, y, ldy, pair); break;
    }
}

template <typename Block>
void reduce_kquant(const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec, float* y,
                   int64_t ldy, GGMLType wt, int pair) {
    const int64_t nb = K / QK_K;
    const ActLayout L = act_layout(wt, K);
    const Block* Wb = reinterpret_cast<const Block*>(W);
    if (n_rec > R_TILE && n_rec <= 2 * R_TILE) {
        // Two tiles, interleaved per row group: the second reads the weights from cache, not memory.
        constexpr int RG = 16;
        ReduceTile a, b;
        reduce_build_tile(acts, L, nb, 0, R_TILE, &a);
        reduce_build_tile(acts, L, nb, R_TILE, n_rec - R_TILE, &b);
        for (int64_t rg = r0; rg < r1; rg += RG) {
            const int64_t re = r1 - rg < RG ? r1 : rg + RG;
            reduce_kquant_rows_n(Wb, nb, rg, re, a, 0, R_TILE, y, ldy, pair);
            reduce_kquant_rows_n(Wb, nb, rg, re, b, R_TILE, n_rec - R_TILE, y, ldy, pair);
        }
        return;
    }
    ReduceTile tile;
    for (int t0 = 0; t0 < n_rec; t0 += R_TILE) {
        const int nt = n_rec - t0 < R_TILE ? n_rec - t0 : R_TILE;
        reduce_build_tile(acts, L, nb, t0, nt, &tile);
        reduce_kquant_rows_n(Wb, nb, r0, r1, tile, t0, nt, y, ldy, pair);
    }
}

}  // namespace

void reduce_kquant_tile(GGMLType wt, const uint8_t* W, int64_t nb, int64_t r0, int64_t r1, const ReduceTile& tile, int t0, int nt,
                 float* y, int64_t ldy, int pair) {
    if (wt == GGMLType::Q4_K) reduce_kquant_rows_n(reinterpret_cast<const BlockQ4K*>(W), nb, r0, r1, tile, t0, nt, y, ldy, pair);
    else if (wt == GGMLType::Q5_K) reduce_kquant_rows_n(reinterpret_cast<const BlockQ5K*>(W), nb, r0, r1, tile, t0, nt, y, ldy, pair);
    else reduce_kquant_rows_n(reinterpret_cast<const BlockQ6K*>(W), nb, r0, r1, tile, t0, nt, y, ldy, pair);
}

}  // namespace lg::quant::avx512

namespace lg {

using namespace quant;
using namespace quant::avx512;

bool matmul_simd(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* act_buf,
                 const float* x, int n_rec, float* y, int64_t ldy, int pair) {
    Plan p = plan(wt, K, n_rec);
    RowlaneMode mode = RowlaneMode::plan;
    if (const int vi = kernel_variant_index(wt, K, n_rec); vi > 0) {  // the calibrated plan's choice
        Variant v[MAX_KERNEL_VARIANTS];
        if (vi < variants(wt, K, n_rec, v)) {
            p = v[vi].plan;
            mode = v[vi].rowlane;
        }
    }
    if (p.rows16 == Kernel::rowlane)
        r0 = is_kquant(wt) ? rowlane_kquant(wt, W, K, r0, r1, act_buf, n_rec, y, ldy, pair, mode)
                           : rowlane_legacy(wt, W, K, r0, r1, act_buf, n_rec, y, ldy, pair);
    if (r0 == r1) return true;
    const bool legacy = is_legacy(wt);
    switch (p.rest) {
        case Kernel::reduce:
            if (legacy) reduce_legacy(wt, W, K, r0, r1, act_buf, n_rec, y, ldy, pair);
            else if (wt == GGMLType::Q4_K) reduce_kquant<BlockQ4K>(W, K, r0, r1, act_buf, n_rec, y, ldy, wt, pair);
            else if (wt == GGMLType::Q5_K) reduce_kquant<BlockQ5K>(W, K, r0, r1, act_buf, n_rec, y, ldy, wt, pair);
            else reduce_kquant<BlockQ6K>(W, K, r0, r1, act_buf, n_rec, y, ldy, wt, pair);
            return true;
        case Kernel::broadcast:
            if (legacy) broadcast_legacy(wt, W, K, r0, r1, act_buf, n_rec, y, ldy, pair);
            else broadcast_kquant(wt, 1, W, K, r0, r1, act_buf, n_rec, y, ldy, pair);
            return true;
        case Kernel::broadcast_g2: broadcast_kquant(wt, 2, W, K, r0, r1, act_buf, n_rec, y, ldy, pair); return true;
        case Kernel::broadcast_g4: broadcast_kquant(wt, 4, W, K, r0, r1, act_buf, n_rec, y, ldy, pair); return true;
        case Kernel::reduce_one_token: reduce1_kquant(wt, W, K, r0, r1, act_buf, n_rec, y, ldy, pair); return true;
        default: return false;
    }
}

const char* simd_name() { return "avx512"; }

int simd_variant_names(GGMLType wt, int64_t K, int n_rec, const char** names) {
    Variant v[MAX_KERNEL_VARIANTS];
    const int n = variants(wt, K, n_rec, v);
    for (int i = 0; i < n; ++i) names[i] = v[i].name;
    return n;
}

bool quantize_blocks_simd(const float* x, int64_t n_blocks, int ablk, int8_t* qs, float* d) {
    const __m512 absmask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
    const __m512 lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
    for (int64_t b = 0; b < n_blocks; ++b) {
        const float* xb = x + b * ablk;
        __m512 m = _mm512_setzero_ps();
        for (int i = 0; i < ablk; i += 16) m = _mm512_max_ps(m, _mm512_and_ps(_mm512_loadu_ps(xb + i), absmask));
        const float amax = _mm512_reduce_max_ps(m);  // max is exact in any order
        const __m512 id = _mm512_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
        for (int i = 0; i < ablk; i += 16) {
            __m512 v = _mm512_roundscale_ps(_mm512_mul_ps(_mm512_loadu_ps(xb + i), id),
                                            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            v = _mm512_min_ps(hi, _mm512_max_ps(lo, v));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + b * ablk + i), _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(v)));
        }
        d[b] = amax / 127.0f;
    }
    return true;
}

}  // namespace lg

#endif

// x86 AVX-512 BW+VNNI kernels: bit-identical to quant_scalar.cpp. Integer block sums are exact,
// so only the float steps must follow the canonical order (quant_blocks.h): K-quants vectorize
// them across vectors t, legacy types across their 8 block lanes. Knows nothing about threads.
#include <cmath>
#include <type_traits>

#include "quant_blocks.h"
#include "quant_kernels.h"

#if LG_SIMD_AVX512
#include <immintrin.h>
// GCC 12 flags the deliberately undefined upper halves inside its own cast intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace lg {

namespace {

constexpr int T_TILE = 8;          // activation vectors per pass over a row: one lane each
constexpr int MAX_KBLOCKS = 128;
constexpr int PREFETCH_BLOCKS = 8;  // K-quant blocks ahead (1.2-1.7 KB)   // K <= 32768 for K-quants (per-tile tables live on the stack)

// ---- integer reductions across t ----------------------------------------------------------
// b[i] = [8-lane partial of accumulator 2i (chunks 0,1) | of accumulator 2i+1 (chunks 2,3)];
// result lane j = total of accumulator j (j < 8).
inline __m256i reduce_pairs(const __m512i b[4]) {
    __m512i c[2];
    for (int i = 0; i < 2; ++i) {  // 128-bit chunk k = 4-lane partial of accumulator 4i+k
        __m512i u = _mm512_shuffle_i64x2(b[2 * i], b[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0));
        __m512i v = _mm512_shuffle_i64x2(b[2 * i], b[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1));
        c[i] = _mm512_add_epi32(u, v);
    }
    // chunk k: lanes [c0.l0+c0.l2, c1.l0+c1.l2, c0.l1+c0.l3, c1.l1+c1.l3]
    __m512i d = _mm512_add_epi32(_mm512_unpacklo_epi32(c[0], c[1]), _mm512_unpackhi_epi32(c[0], c[1]));
    __m512i e = _mm512_add_epi32(d, _mm512_shuffle_epi32(d, _MM_PERM_BADC));  // lane0: acc k, lane1: acc 4+k
    const __m512i idx = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_castsi512_si256(_mm512_permutexvar_epi32(idx, e));
}

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

// ---- K-quant decode -------------------------------------------------------------------------
// A K-quant block as 4 zmm of unsigned values in element order (64 each), and int16 per-16
// scales (and mins, Q4_K/Q5_K) as 16 lanes.
struct KBlock {
    __m512i q[4];
    __m256i sc16, mn16;
    float dw, dm;
};

// int16 lanes 0..15 = a, 16..31 = b (a 16-bit value per 256-bit half).
inline __m512i halves16(int a, int b) {
    return _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16(short(a)), _mm512_set1_epi16(short(b)));
}

inline __m256i dup8_to16(__m128i x8) {  // 8 int16 -> 16 int16, each twice
    return _mm256_set_m128i(_mm_unpackhi_epi16(x8, x8), _mm_unpacklo_epi16(x8, x8));
}

// The 8 six-bit scales and 8 mins of a Q4_K/Q5_K block, one byte each (sub-block j in byte j).
inline void q4k_unpack(const uint8_t* s, uint64_t* sc, uint64_t* mn) {
    uint32_t a, b, c;
    std::memcpy(&a, s, 4);
    std::memcpy(&b, s + 4, 4);
    std::memcpy(&c, s + 8, 4);
    *sc = (a & 0x3f3f3f3fu) | (uint64_t((c & 0x0f0f0f0fu) | ((a >> 2) & 0x30303030u)) << 32);
    *mn = (b & 0x3f3f3f3fu) | (uint64_t(((c >> 4) & 0x0f0f0f0fu) | ((b >> 2) & 0x30303030u)) << 32);
}

inline void q4k_scales(const uint8_t* s, KBlock* o) {
    uint64_t sc, mn;
    q4k_unpack(s, &sc, &mn);
    o->sc16 = dup8_to16(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(sc))));
    o->mn16 = dup8_to16(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(mn))));
}

// Nibbles of 64 bytes of qs (two 32-byte chunks j, j+1) -> values of sub-blocks 2j..2j+3.
inline void q4k_nibbles(const uint8_t* qs, __m512i* q0, __m512i* q1) {
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    __m512i z = _mm512_loadu_si512(qs);
    __m512i lo = _mm512_and_si512(z, m4), hi = _mm512_and_si512(_mm512_srli_epi16(z, 4), m4);
    *q0 = _mm512_shuffle_i64x2(lo, hi, _MM_SHUFFLE(1, 0, 1, 0));
    *q1 = _mm512_shuffle_i64x2(lo, hi, _MM_SHUFFLE(3, 2, 3, 2));
}

inline void decode(const BlockQ4K* b, KBlock* o) {
    o->dw = _cvtsh_ss(b->d);
    o->dm = _cvtsh_ss(b->dmin);
    q4k_scales(b->scales, o);
    q4k_nibbles(b->qs, &o->q[0], &o->q[1]);
    q4k_nibbles(b->qs + 64, &o->q[2], &o->q[3]);
}

inline void decode(const BlockQ5K* b, KBlock* o) {
    o->dw = _cvtsh_ss(b->d);
    o->dm = _cvtsh_ss(b->dmin);
    q4k_scales(b->scales, o);
    q4k_nibbles(b->qs, &o->q[0], &o->q[1]);
    q4k_nibbles(b->qs + 64, &o->q[2], &o->q[3]);
    // Fifth bit of element 32j + l is bit j of qh[l]; q[k] holds sub-blocks 2k (low half), 2k+1.
    const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh)));
    const __m512i one = _mm512_set1_epi8(1);
    for (int k = 0; k < 4; ++k) {
        const __m512i sh = halves16(2 * k, 2 * k + 1);
        __m512i bit = _mm512_and_si512(_mm512_srlv_epi16(qh, sh), one);
        o->q[k] = _mm512_or_si512(o->q[k], _mm512_slli_epi16(bit, 4));
    }
}

inline void decode(const BlockQ6K* b, KBlock* o) {
    o->dw = _cvtsh_ss(b->d);
    o->dm = 0.0f;
    o->sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b->scales)));
    o->mn16 = _mm256_setzero_si256();
    const __m512i m4 = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
    // Element 128h + w: low nibble of ql[64h + w%64] (high nibble for w >= 64), bits 2*(w/32)
    // of qh[32h + w%32] as bits 4..5.
    const __m512i sh_lo = halves16(4, 2);  // w/32 = 0, 1
    const __m512i sh_hi = halves16(0, 2);  // w/32 = 2, 3
    for (int h = 0; h < 2; ++h) {
        __m512i ql = _mm512_loadu_si512(b->ql + 64 * h);
        __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh + 32 * h)));
        __m512i hlo = _mm512_and_si512(_mm512_sllv_epi16(qh, sh_lo), m30);
        __m512i hhi = _mm512_and_si512(_mm512_srlv_epi16(qh, sh_hi), m30);
        o->q[2 * h] = _mm512_or_si512(_mm512_and_si512(ql, m4), hlo);
        o->q[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4), hhi);
    }
}

// ---- per-tile activation tables ---------------------------------------------------------------
// dxT[b][t]: block scales transposed; bsT[b][z]: the per-16 sums of vector t, arranged so that
// int32 lane 8*(kp%2) + t of madd(bsT[b][z], pairs) pairs sums k = 2kp, 2kp+1 (kp = 2z + lane/8).
struct KTile {
    alignas(64) float dxT[MAX_KBLOCKS][T_TILE];
    alignas(64) int16_t bsT[MAX_KBLOCKS][4][32];
    const int8_t* xq[T_TILE];
};

void build_tile(const uint8_t* acts, const ActLayout& L, int64_t nb, int t0, int nt, KTile* tile) {
    std::memset(tile->dxT, 0, sizeof(float) * T_TILE * nb);
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
    for (int t = nt; t < T_TILE; ++t) tile->xq[t] = tile->xq[0];
}

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
inline __m256 kquant_blocks(const Block* row, int64_t b0, int64_t b1, const KTile& tile, __m256 acc) {
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
void kquant_rows(const Block* W, int64_t nb, int64_t r0, int64_t r1, const KTile& tile, int t0, float* y,
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
            for (int i = 0; i < nr; ++i) acc[i] = kquant_blocks<Block, NT>(W + (rg + i) * nb, c, c1, tile, acc[i]);
        }
        for (int i = 0; i < nr; ++i) {
            alignas(32) float tmp[8];
            _mm256_store_ps(tmp, acc[i]);
            store_out(y, ldy, rg + i, t0, tmp, NT, pair);
        }
    }
}

// ---- broadcast kernel (many vectors) ---------------------------------------------------------
// For wide tiles the per-block horizontal reductions above cost as much as the dot products. This
// kernel turns the loops around: a vector register holds NV activation vectors (lane t = vector t),
// each group of 4 decoded weights is broadcast, and vpdpbusd accumulates per-lane sums directly, so
// nothing is reduced across lanes. It computes the same exact integers i1, i2 per (row, vector, block)
// and applies the same float steps (quant_blocks.h), so it is bit-identical to the kernel above and
// to the scalar path; matmul picks it by tile width only.
//   Per sub-block j: S_j = sum q x over its elements (q the unsigned stored value), then
//   i1 = sum_j sc_j S_j; Q6_K's offset enters as S_j's start value -32 * (sum of x over sub-block j),
//   which depends on the vector only, so it is built once per tile.
// Bounds: |S_j| <= 32 * 31 * 127 (Q4_K/Q5_K) or 16 * 63 * 127 + 32 * 16 * 127 (Q6_K), times |sc| <= 63
// or 128, over 8 / 16 sub-blocks: below 2^28, so every int32 step is exact.
constexpr int BC_MAX_KBLOCKS = 80;  // K <= 20480 (the tile lives on the stack: K * 16 bytes of activations)
constexpr int BC_ROWS = 4;          // rows sharing each activation load
// Records per call from which the broadcast kernel runs. Below, the reducing kernel above is faster:
// measured on Zen 4 (4096x1536 Q4_K, one thread), 8 records cost 357 us there and 543 us here with half
// the lanes idle, and 10 records as two reducing tiles interleaved per row group cost less than one
// broadcast tile; an 8-lane (ymm) variant was no faster, ymm vpdpbusd issuing at the zmm instruction rate.
constexpr int BC_MIN_VECTORS = 12;

template <int NV> struct BcVec;
template <> struct BcVec<16> {
    using I = __m512i;
    using F = __m512;
    static I load(const void* p) { return _mm512_load_si512(p); }
    static I bcast(const void* p) { int v; std::memcpy(&v, p, 4); return _mm512_set1_epi32(v); }
    static I zero() { return _mm512_setzero_si512(); }
    static I dpbusd(I acc, I u, I s) { return _mm512_dpbusd_epi32(acc, u, s); }
    static I dpwssd(I acc, I a, I b) { return _mm512_dpwssd_epi32(acc, a, b); }
    static I mullo(I a, I b) { return _mm512_mullo_epi32(a, b); }
    static I add(I a, I b) { return _mm512_add_epi32(a, b); }
    static F fzero() { return _mm512_setzero_ps(); }
    static F fload(const float* p) { return _mm512_load_ps(p); }
    static F fset1(float v) { return _mm512_set1_ps(v); }
    static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
    static F cvt(I a) { return _mm512_cvtepi32_ps(a); }
    static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
    static F fnmadd(F a, F b, F c) { return _mm512_fnmadd_ps(a, b, c); }
    static void fstore(float* p, F a) { _mm512_store_ps(p, a); }
};

// One tile of NV vectors, transposed: xq[g][t] = bytes 4g..4g+3 of vector t (int8); dx[b][t] block
// scales; xs[b][m][t] = (int16 sum of sub-block 2m, int16 sum of sub-block 2m+1) over 32-element
// sub-blocks (Q4_K/Q5_K mins); x32[b][j][t] = -32 * sum of 16-element sub-block j (Q6_K offset).
// Vectors past the tile's end are zero.
template <int NV>
struct BcTile {
    alignas(64) uint32_t xq[BC_MAX_KBLOCKS * QK_K / 4][NV];
    alignas(64) float dx[BC_MAX_KBLOCKS][NV];
    alignas(64) uint32_t xs[BC_MAX_KBLOCKS][4][NV];
    alignas(64) int32_t x32[BC_MAX_KBLOCKS][16][NV];
};

template <int NV>
void bc_build_tile(const uint8_t* acts, const ActLayout& L, int64_t nb, int t0, int nt, bool q6, BcTile<NV>* tile) {
    const int64_t ng = nb * QK_K / 4;
    for (int t = 0; t < NV; ++t) {
        if (t >= nt) {
            for (int64_t g = 0; g < ng; ++g) tile->xq[g][t] = 0;
            for (int64_t b = 0; b < nb; ++b) {
                tile->dx[b][t] = 0.0f;
                for (int m = 0; m < 4; ++m) tile->xs[b][m][t] = 0;
                for (int j = 0; j < 16; ++j) tile->x32[b][j][t] = 0;
            }
            continue;
        }
        const uint8_t* rec = acts + static_cast<int64_t>(t0 + t) * L.stride;
        for (int64_t g = 0; g < ng; ++g) std::memcpy(&tile->xq[g][t], rec + 4 * g, 4);
        const float* d = reinterpret_cast<const float*>(rec + L.d_off);
        const int16_t* s16 = reinterpret_cast<const int16_t*>(rec + L.sums_off);
        for (int64_t b = 0; b < nb; ++b) {
            tile->dx[b][t] = d[b];
            const int16_t* s = s16 + 16 * b;
            if (q6) {
                for (int j = 0; j < 16; ++j) tile->x32[b][j][t] = -32 * s[j];
            } else {
                for (int m = 0; m < 4; ++m) {  // 32-element sub-block 2m = per-16 sums 4m, 4m+1
                    const uint16_t lo = static_cast<uint16_t>(s[4 * m] + s[4 * m + 1]);
                    const uint16_t hi = static_cast<uint16_t>(s[4 * m + 2] + s[4 * m + 3]);
                    tile->xs[b][m][t] = lo | (uint32_t(hi) << 16);
                }
            }
        }
    }
}

// One weight block of one row, decoded for the broadcast kernel.
struct BcBlock {
    alignas(64) uint8_t q[QK_K];  // stored (unsigned) values in element order
    alignas(64) int32_t sc[16];   // per sub-block scales (8 used for Q4_K/Q5_K)
    alignas(16) int16_t mn[8];    // Q4_K/Q5_K mins: int32 m holds the pair (2m, 2m+1)
    float dw, dm;
};

inline void bc_store_q(const KBlock& w, BcBlock* o) {
    for (int k = 0; k < 4; ++k) _mm512_store_si512(o->q + 64 * k, w.q[k]);
}

inline void bc_decode_k4(const uint8_t* s, BcBlock* o) {  // Q4_K/Q5_K 6-bit scales and mins
    uint64_t sc, mn;
    q4k_unpack(s, &sc, &mn);
    _mm256_store_si256(reinterpret_cast<__m256i*>(o->sc), _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(sc))));
    _mm_store_si128(reinterpret_cast<__m128i*>(o->mn), _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(mn))));
}

inline void bc_decode(const BlockQ4K* b, BcBlock* o) {
    o->dw = _cvtsh_ss(b->d);
    o->dm = _cvtsh_ss(b->dmin);
    bc_decode_k4(b->scales, o);
    KBlock w;
    q4k_nibbles(b->qs, &w.q[0], &w.q[1]);
    q4k_nibbles(b->qs + 64, &w.q[2], &w.q[3]);
    bc_store_q(w, o);
}

inline void bc_decode(const BlockQ5K* b, BcBlock* o) {
    KBlock w;
    decode(b, &w);
    bc_decode_k4(b->scales, o);
    o->dw = w.dw;
    o->dm = w.dm;
    bc_store_q(w, o);
}

inline void bc_decode(const BlockQ6K* b, BcBlock* o) {
    KBlock w;
    decode(b, &w);
    _mm512_store_si512(o->sc, _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b->scales))));
    o->dw = w.dw;
    o->dm = 0.0f;
    bc_store_q(w, o);
}

// The reducing kernel on a tile of nt <= T_TILE vectors (the broadcast kernel's remainder).
template <typename Block>
void kquant_rows_n(const Block* W, int64_t nb, int64_t r0, int64_t r1, const KTile& tile, int t0, int nt, float* y,
                   int64_t ldy, int pair) {
    switch (nt) {
        case 1: kquant_rows<Block, 1>(W, nb, r0, r1, tile, t0, y, ldy, pair); break;
        case 2: kquant_rows<Block, 2>(W, nb, r0, r1, tile, t0, y, ldy, pair); break;
        case 3: kquant_rows<Block, 3>(W, nb, r0, r1, tile, t0, y, ldy, pair); break;
        case 4: kquant_rows<Block, 4>(W, nb, r0, r1, tile, t0, y, ldy, pair); break;
        case 5: kquant_rows<Block, 5>(W, nb, r0, r1, tile, t0, y, ldy, pair); break;
        case 6: kquant_rows<Block, 6>(W, nb, r0, r1, tile, t0, y, ldy, pair); break;
        case 7: kquant_rows<Block, 7>(W, nb, r0, r1, tile, t0, y, ldy, pair); break;
        default: kquant_rows<Block, 8>(W, nb, r0, r1, tile, t0, y, ldy, pair); break;
    }
}

// Rows [r0, r1) against one broadcast tile (vectors t0 .. t0 + nt). Then, per row group while its
// weights are still in cache, the remainder tile (if any) through the reducing kernel.
// (Decoding each block once for several tiles, with the accumulators in memory, measured slower.)
template <typename Block, int NV>
void bc_rows(const Block* W, int64_t nb, int64_t r0, int64_t r1, const BcTile<NV>& tile, int t0, int nt,
             const KTile* rest, int rest_t0, int rest_nt, float* y, int64_t ldy, int pair) {
    using V = BcVec<NV>;
    constexpr bool kQ6 = std::is_same<Block, BlockQ6K>::value;
    constexpr int SUB = kQ6 ? 16 : 8;    // sub-blocks per block
    constexpr int GPS = QK_K / 4 / SUB;  // 4-element groups per sub-block
    BcBlock blk[BC_ROWS];
    for (int64_t rg = r0; rg < r1; rg += BC_ROWS) {
        const int nr = r1 - rg < BC_ROWS ? static_cast<int>(r1 - rg) : BC_ROWS;
        typename V::F acc[BC_ROWS];
        for (int i = 0; i < BC_ROWS; ++i) acc[i] = V::fzero();
        for (int64_t b = 0; b < nb; ++b) {
            for (int i = 0; i < BC_ROWS; ++i) {
                const Block* wb = W + (rg + (i < nr ? i : 0)) * nb + b;
                const char* ahead = reinterpret_cast<const char*>(wb + 2);
                for (size_t off = 0; off < sizeof(Block); off += 64) _mm_prefetch(ahead + off, _MM_HINT_T0);
                bc_decode(wb, &blk[i]);
            }
            typename V::I i1[BC_ROWS];
            for (int i = 0; i < BC_ROWS; ++i) i1[i] = V::zero();
            const uint32_t(*xq)[NV] = tile.xq + b * (QK_K / 4);
            for (int j = 0; j < SUB; ++j) {
                typename V::I s[BC_ROWS][2];
                for (int i = 0; i < BC_ROWS; ++i) {
                    s[i][0] = kQ6 ? V::load(tile.x32[b][j]) : V::zero();
                    s[i][1] = V::zero();
                }
                for (int g = 0; g < GPS; ++g) {
                    const int gi = j * GPS + g;
                    const typename V::I xv = V::load(xq[gi]);
                    for (int i = 0; i < BC_ROWS; ++i) s[i][g & 1] = V::dpbusd(s[i][g & 1], V::bcast(blk[i].q + 4 * gi), xv);
                }
                for (int i = 0; i < BC_ROWS; ++i)
                    i1[i] = V::add(i1[i], V::mullo(V::add(s[i][0], s[i][1]), V::bcast(&blk[i].sc[j])));
            }
            const typename V::F dx = V::fload(tile.dx[b]);
            for (int i = 0; i < BC_ROWS; ++i) {
                acc[i] = V::fmadd(V::mul(V::fset1(blk[i].dw), dx), V::cvt(i1[i]), acc[i]);
                if constexpr (!kQ6) {
                    typename V::I i2 = V::zero();
                    for (int m = 0; m < 4; ++m) i2 = V::dpwssd(i2, V::load(tile.xs[b][m]), V::bcast(blk[i].mn + 2 * m));
                    acc[i] = V::fnmadd(V::mul(V::fset1(blk[i].dm), dx), V::cvt(i2), acc[i]);
                }
            }
        }
        for (int i = 0; i < nr; ++i) {
            alignas(64) float tmp[NV];
            V::fstore(tmp, acc[i]);
            store_out(y, ldy, rg + i, t0, tmp, nt, pair);
        }
        if (rest) kquant_rows_n(W, nb, rg, rg + nr, *rest, rest_t0, rest_nt, y, ldy, pair);
    }
}

// T >= 9 records. Tiles of 16 go through the broadcast kernel; a remainder of up to 8 through the
// reducing kernel (cheaper than a mostly idle tile), a larger one as one more, padded, tile.
template <typename Block>
void bc_matmul(const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int T, float* y,
               int64_t ldy, GGMLType wt, int pair) {
    constexpr int NV = 16;
    const int64_t nb = K / QK_K;
    const ActLayout L = act_layout(wt, K);
    const Block* Wb = reinterpret_cast<const Block*>(W);
    int n_bc = T / NV, rest = T % NV;
    if (rest > T_TILE) {
        ++n_bc;
        rest = 0;
    }
    const int t_rest = n_bc * NV;
    KTile rest_tile;
    if (rest) build_tile(acts, L, nb, t_rest, rest, &rest_tile);
    BcTile<NV> tile;
    for (int k = 0; k < n_bc; ++k) {
        const int t0 = k * NV, nt = T - t0 < NV ? T - t0 : NV;
        bc_build_tile<NV>(acts, L, nb, t0, nt, std::is_same<Block, BlockQ6K>::value, &tile);
        const bool last = k + 1 == n_bc;
        bc_rows<Block, NV>(Wb, nb, r0, r1, tile, t0, nt, last && rest ? &rest_tile : nullptr, t_rest, rest, y, ldy, pair);
    }
}

template <typename Block>
void kquant_matmul(const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int T, float* y,
                   int64_t ldy, GGMLType wt, int pair) {
    const int64_t nb = K / QK_K;
    const ActLayout L = act_layout(wt, K);
    const Block* Wb = reinterpret_cast<const Block*>(W);
    if (T > T_TILE && T <= 2 * T_TILE) {
        // Two tiles, interleaved per row group: the second reads the weights from cache, not memory.
        constexpr int RG = 16;
        KTile a, b;
        build_tile(acts, L, nb, 0, T_TILE, &a);
        build_tile(acts, L, nb, T_TILE, T - T_TILE, &b);
        for (int64_t rg = r0; rg < r1; rg += RG) {
            const int64_t re = r1 - rg < RG ? r1 : rg + RG;
            kquant_rows_n(Wb, nb, rg, re, a, 0, T_TILE, y, ldy, pair);
            kquant_rows_n(Wb, nb, rg, re, b, T_TILE, T - T_TILE, y, ldy, pair);
        }
        return;
    }
    KTile tile;
    for (int t0 = 0; t0 < T; t0 += T_TILE) {
        const int nt = T - t0 < T_TILE ? T - t0 : T_TILE;
        build_tile(acts, L, nb, t0, nt, &tile);
        kquant_rows_n(Wb, nb, r0, r1, tile, t0, nt, y, ldy, pair);
    }
}

// ---- legacy 32-blocks (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) -----------------------------------------
// A group of up to 8 blocks: q[z] holds blocks 2z, 2z+1 as unsigned values (32 each, element
// order), so that dpbusd with the activations gives per-block partials in reduce_pairs form.
struct LGroup {
    __m512i q[4];
    __m256 dw, dm;
};

template <GGMLType WT> struct Legacy;
template <> struct Legacy<GGMLType::Q4_0> { using B = BlockQ4_0; static constexpr int off_shift = 3; };
template <> struct Legacy<GGMLType::Q4_1> { using B = BlockQ4_1; static constexpr int off_shift = 0; };
template <> struct Legacy<GGMLType::Q5_0> { using B = BlockQ5_0; static constexpr int off_shift = 4; };
template <> struct Legacy<GGMLType::Q5_1> { using B = BlockQ5_1; static constexpr int off_shift = 0; };
template <> struct Legacy<GGMLType::Q8_0> { using B = BlockQ8_0; static constexpr int off_shift = 7; };

template <typename B>
inline uint64_t qh_pair(const B* b, int i, int n) {  // fifth bits of blocks i, i+1 (if present)
    uint32_t lo, hi = 0;
    std::memcpy(&lo, b[i].qh, 4);
    if (i + 1 < n) std::memcpy(&hi, b[i + 1].qh, 4);
    return lo | (uint64_t(hi) << 32);
}

template <GGMLType WT>
inline void decode_group(const typename Legacy<WT>::B* b, int n, LGroup* g) {
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

template <GGMLType WT, int NT>
void legacy_row(const typename Legacy<WT>::B* row, int64_t nb, const uint8_t* const* rec, const ActLayout& L,
                float* out) {
    constexpr bool kMin = WT == GGMLType::Q4_1 || WT == GGMLType::Q5_1;
    __m256 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t g0 = 0; g0 < nb; g0 += L_LANES) {
        const int n = nb - g0 < L_LANES ? static_cast<int>(nb - g0) : L_LANES;
        const __mmask8 lanes = static_cast<__mmask8>((1u << n) - 1);
        LGroup g;
        decode_group<WT>(row + g0, n, &g);
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
            if constexpr (Legacy<WT>::off_shift != 0)  // values were stored as v + 2^off_shift
                i1 = _mm256_sub_epi32(i1, _mm256_slli_epi32(sums, Legacy<WT>::off_shift));
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

// Broadcast kernel for legacy types without a min (Q4_0, Q5_0, Q8_0), 12+ records: as for K-quants,
// 16 vectors per zmm and broadcast weights, so no per-block lane reductions. Per block b of 32:
// i1 = sum u x - 2^off_shift * sum x (u the stored unsigned values), exact in int32; then the canonical
// float steps: lane b % 8 += (dw_b * dx_b) * i1, and the 8 lanes fold (l, l+4), (l, l+2), (l, l+1).
constexpr int LC_MAX_BLOCKS = BC_MAX_KBLOCKS * QK_K / QK32;
constexpr int LC_ROWS = 2;

struct LcTile {
    alignas(64) uint32_t xq[LC_MAX_BLOCKS * QK32 / 4][16];
    alignas(64) float dx[LC_MAX_BLOCKS][16];
    alignas(64) int32_t xoff[LC_MAX_BLOCKS][16];  // -2^off_shift * (sum of the block's 32 values)
};

inline void lc_build_tile(const uint8_t* acts, const ActLayout& L, int64_t nb, int t0, int nt, int off_shift,
                          LcTile* tile) {
    const int64_t ng = nb * QK32 / 4;
    for (int t = 0; t < 16; ++t) {
        if (t >= nt) {
            for (int64_t g = 0; g < ng; ++g) tile->xq[g][t] = 0;
            for (int64_t b = 0; b < nb; ++b) tile->dx[b][t] = 0.0f, tile->xoff[b][t] = 0;
            continue;
        }
        const uint8_t* rec = acts + static_cast<int64_t>(t0 + t) * L.stride;
        for (int64_t g = 0; g < ng; ++g) std::memcpy(&tile->xq[g][t], rec + 4 * g, 4);
        const float* d = reinterpret_cast<const float*>(rec + L.d_off);
        const int16_t* s16 = reinterpret_cast<const int16_t*>(rec + L.sums_off);
        for (int64_t b = 0; b < nb; ++b) {
            tile->dx[b][t] = d[b];
            tile->xoff[b][t] = -(static_cast<int32_t>(s16[b]) * (1 << off_shift));
        }
    }
}

template <GGMLType WT>
void lc_rows(const typename Legacy<WT>::B* W, int64_t nb, int64_t r0, int64_t r1, const LcTile& tile, int t0, int nt,
             float* y, int64_t ldy, int pair) {
    constexpr bool kOff = Legacy<WT>::off_shift != 0;
    alignas(64) uint8_t q[LC_ROWS][L_LANES * QK32];
    alignas(32) float dw[LC_ROWS][L_LANES];
    for (int64_t rg = r0; rg < r1; rg += LC_ROWS) {
        const int nr = r1 - rg < LC_ROWS ? static_cast<int>(r1 - rg) : LC_ROWS;
        __m512 acc[LC_ROWS][L_LANES];
        for (int i = 0; i < LC_ROWS; ++i)
            for (int l = 0; l < L_LANES; ++l) acc[i][l] = _mm512_setzero_ps();
        for (int64_t g0 = 0; g0 < nb; g0 += L_LANES) {
            const int n = nb - g0 < L_LANES ? static_cast<int>(nb - g0) : L_LANES;
            for (int i = 0; i < LC_ROWS; ++i) {
                LGroup g;
                decode_group<WT>(W + (rg + (i < nr ? i : 0)) * nb + g0, n, &g);
                for (int z = 0; z < 4; ++z) _mm512_store_si512(q[i] + 64 * z, g.q[z]);
                _mm256_store_ps(dw[i], g.dw);
            }
            for (int j = 0; j < n; ++j) {
                const int64_t b = g0 + j;
                __m512i s[LC_ROWS][2];
                for (int i = 0; i < LC_ROWS; ++i) {
                    s[i][0] = kOff ? _mm512_load_si512(tile.xoff[b]) : _mm512_setzero_si512();
                    s[i][1] = _mm512_setzero_si512();
                }
                for (int gq = 0; gq < QK32 / 4; ++gq) {
                    const __m512i xv = _mm512_load_si512(tile.xq[b * (QK32 / 4) + gq]);
                    for (int i = 0; i < LC_ROWS; ++i) {
                        int wv;
                        std::memcpy(&wv, q[i] + QK32 * j + 4 * gq, 4);
                        s[i][gq & 1] = _mm512_dpbusd_epi32(s[i][gq & 1], _mm512_set1_epi32(wv), xv);
                    }
                }
                const __m512 dx = _mm512_load_ps(tile.dx[b]);
                for (int i = 0; i < LC_ROWS; ++i)
                    acc[i][j] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(dw[i][j]), dx),
                                                _mm512_cvtepi32_ps(_mm512_add_epi32(s[i][0], s[i][1])), acc[i][j]);
            }
        }
        for (int i = 0; i < nr; ++i) {
            __m512* a = acc[i];
            for (int w = L_LANES / 2; w >= 1; w /= 2)
                for (int l = 0; l < w; ++l) a[l] = _mm512_add_ps(a[l], a[l + w]);
            alignas(64) float tmp[16];
            _mm512_store_ps(tmp, a[0]);
            store_out(y, ldy, rg + i, t0, tmp, nt, pair);
        }
    }
}

template <GGMLType WT>
void lc_matmul(const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int T, float* y, int64_t ldy,
               int pair) {
    const int64_t nb = K / QK32;
    const ActLayout L = act_layout(WT, K);
    LcTile tile;
    for (int t0 = 0; t0 < T; t0 += 16) {
        const int nt = T - t0 < 16 ? T - t0 : 16;
        lc_build_tile(acts, L, nb, t0, nt, Legacy<WT>::off_shift, &tile);
        lc_rows<WT>(reinterpret_cast<const typename Legacy<WT>::B*>(W), nb, r0, r1, tile, t0, nt, y, ldy, pair);
    }
}

template <GGMLType WT>
void legacy_matmul(const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int T, float* y,
                   int64_t ldy, int pair) {
    using B = typename Legacy<WT>::B;
    const int64_t nb = K / QK32;
    const ActLayout L = act_layout(WT, K);
    float out[T_TILE];
    const uint8_t* rec[T_TILE];
    for (int t0 = 0; t0 < T; t0 += T_TILE) {
        const int nt = T - t0 < T_TILE ? T - t0 : T_TILE;
        for (int t = 0; t < nt; ++t) rec[t] = acts + static_cast<int64_t>(t0 + t) * L.stride;
        for (int64_t r = r0; r < r1; ++r) {
            const B* row = reinterpret_cast<const B*>(W) + r * nb;
            switch (nt) {
                case 1: legacy_row<WT, 1>(row, nb, rec, L, out); break;
                case 2: legacy_row<WT, 2>(row, nb, rec, L, out); break;
                case 3: legacy_row<WT, 3>(row, nb, rec, L, out); break;
                case 4: legacy_row<WT, 4>(row, nb, rec, L, out); break;
                case 5: legacy_row<WT, 5>(row, nb, rec, L, out); break;
                case 6: legacy_row<WT, 6>(row, nb, rec, L, out); break;
                case 7: legacy_row<WT, 7>(row, nb, rec, L, out); break;
                default: legacy_row<WT, 8>(row, nb, rec, L, out); break;
            }
            store_out(y, ldy, r, t0, out, nt, pair);
        }
    }
}

}  // namespace

bool matmul_simd(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* act_buf,
                 const float* x, int T, float* y, int64_t ldy, int pair) {
    switch (wt) {
        case GGMLType::Q4_K:
        case GGMLType::Q5_K:
        case GGMLType::Q6_K:
            if (K / QK_K > MAX_KBLOCKS) return false;
            if (T >= BC_MIN_VECTORS && K / QK_K <= BC_MAX_KBLOCKS) {
                if (wt == GGMLType::Q4_K) bc_matmul<BlockQ4K>(W, K, r0, r1, act_buf, T, y, ldy, wt, pair);
                else if (wt == GGMLType::Q5_K) bc_matmul<BlockQ5K>(W, K, r0, r1, act_buf, T, y, ldy, wt, pair);
                else bc_matmul<BlockQ6K>(W, K, r0, r1, act_buf, T, y, ldy, wt, pair);
                return true;
            }
            if (wt == GGMLType::Q4_K) kquant_matmul<BlockQ4K>(W, K, r0, r1, act_buf, T, y, ldy, wt, pair);
            else if (wt == GGMLType::Q5_K) kquant_matmul<BlockQ5K>(W, K, r0, r1, act_buf, T, y, ldy, wt, pair);
            else kquant_matmul<BlockQ6K>(W, K, r0, r1, act_buf, T, y, ldy, wt, pair);
            return true;
        case GGMLType::Q4_0:
            if (T >= BC_MIN_VECTORS && K / QK32 <= LC_MAX_BLOCKS) lc_matmul<GGMLType::Q4_0>(W, K, r0, r1, act_buf, T, y, ldy, pair);
            else legacy_matmul<GGMLType::Q4_0>(W, K, r0, r1, act_buf, T, y, ldy, pair);
            return true;
        case GGMLType::Q4_1: legacy_matmul<GGMLType::Q4_1>(W, K, r0, r1, act_buf, T, y, ldy, pair); return true;
        case GGMLType::Q5_0:
            if (T >= BC_MIN_VECTORS && K / QK32 <= LC_MAX_BLOCKS) lc_matmul<GGMLType::Q5_0>(W, K, r0, r1, act_buf, T, y, ldy, pair);
            else legacy_matmul<GGMLType::Q5_0>(W, K, r0, r1, act_buf, T, y, ldy, pair);
            return true;
        case GGMLType::Q5_1: legacy_matmul<GGMLType::Q5_1>(W, K, r0, r1, act_buf, T, y, ldy, pair); return true;
        case GGMLType::Q8_0:
            if (T >= BC_MIN_VECTORS && K / QK32 <= LC_MAX_BLOCKS) lc_matmul<GGMLType::Q8_0>(W, K, r0, r1, act_buf, T, y, ldy, pair);
            else legacy_matmul<GGMLType::Q8_0>(W, K, r0, r1, act_buf, T, y, ldy, pair);
            return true;
        default:
            return false;
    }
}

const char* simd_name() { return "avx512"; }

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

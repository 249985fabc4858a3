// x86 AVX-512 broadcast kernels for calls of several activation records (prefill, verification): a zmm
// holds 16 activation records, one lane each (or 8 with two lanes each for calls of 5-8 records, 4 with
// four lanes each for Q6_K calls of 3-4), and decoded weights are broadcast, so nothing is reduced
// across lanes per block. Bit-identical to the reducing kernels (avx512.cpp) and to
// scalar.cpp. Knows nothing about threads.
#include <type_traits>

#include "quant/x86/avx512.h"

#if LG_SIMD_AVX512

namespace lg::quant::avx512 {

namespace {

// ---- broadcast kernel (many vectors) ---------------------------------------------------------
// For wide tiles the per-block horizontal reductions of the reducing kernel (avx512.cpp) cost as much as the dot products. This
// kernel turns the loops around: a vector register holds NV activation vectors (lane t = vector t),
// each group of 4 decoded weights is broadcast, and vpdpbusd accumulates per-lane sums directly, so
// nothing is reduced across lanes. It computes the same exact integers i1, i2 per (row, vector, block)
// and applies the same float steps (blocks.h), so it is bit-identical to the reducing kernel and
// to the scalar path; matmul picks it by tile width only.
//   Per sub-block j: S_j = sum q x over its elements (q the unsigned stored value), then
//   i1 = sum_j sc_j S_j; Q6_K's offset enters as S_j's start value -32 * (sum of x over sub-block j),
//   which depends on the vector only, so it is built once per tile.
// Bounds: |S_j| <= 32 * 31 * 127 (Q4_K/Q5_K) or 16 * 63 * 127 + 32 * 16 * 127 (Q6_K), times |sc| <= 63
// or 128, over 8 / 16 sub-blocks: below 2^28, so every int32 step is exact.
// Rows sharing each activation load. Measured (one thread, 32 records): Q4_K/Q5_K 8960x1536, 6 rows
// 1.84-1.92 ms, 4 rows 2.4-2.5, 5 rows 2.5, 7 or 8 rows 4.0-4.4 (the accumulators spill); 8 records
// (two lanes each) 6 rows 0.57 ms, 4 rows 0.72, 8 rows 1.10. Q6_K 1536x8960 (no mins, so more rows fit):
// 8 rows 2.23-2.26 ms, 7 rows 2.60-2.61, 10 rows 2.65, 4 rows 2.42; 8 records 0.53 ms (0.65 with 4 or
// 6 rows), 4 records 0.41 (0.43-0.44 with 4 rows).
constexpr int BROADCAST_ROWS_K4 = 6;
constexpr int BROADCAST_ROWS_Q6 = 8;
// Records per call from which the broadcast kernel runs (a tile of 16 lanes, padded). Measured on the
// 1.5B, one forward of T tokens (2T records): T = 3, 4 cost 36 and 43 ms through the reducing kernel,
// 54 ms here; T = 5 (10 records) 55 ms here, 61 ms as two reducing tiles interleaved per row group.
// Records from which 5-8 records take the two-lanes-per-record tile (G = 2) instead of the reducing
// kernel. Measured (one thread, tiles of 8960x1536 Q4_K / 1536x8960 Q6_K): 8 records 567 / 640 us here,
// 772 / 752 us there; 6 records 554 / 643 us, 640 / 623 us there. 1.5B forward of 4 tokens: 36 ms, 43-46
// there; of 3 tokens: 35.5 ms either way.
// Q6_K calls of 9-12 records: one two-lane tile of 8 and the rest (up to BROADCAST_G2_MAX_REST) through the
// reducing kernel, instead of one padded 16-lane tile. Measured (one thread, Q6_K 1536x8960): 10
// records 844-847 us against 1134-1145, 12 records 968-976 against 1137-1148, 14 and 16 records no
// better (1113-1117, 1066-1080 against 1125-1140); 1.5B forward of 5 tokens 42 ms against 48-52.
// Q6_K only: 3-4 records take four lanes per record (G = 4). Measured (one thread, 4 records): Q6_K
// 1536x8960 408 us here, 451-468 us in the reducing kernel; Q4_K 8960x1536 661 us here, 480 there.
// 1.5B forward of 2 tokens: 28.4-28.8 ms, 29.8-30.9 without.

struct BroadcastVec {  // 16 int32 / float lanes
    using I = __m512i;
    using F = __m512;
    static I load(const void* p) { return _mm512_load_si512(p); }
    template <int G>  // G int32 at p, repeated across the register
    static I bcast(const void* p) {
        if constexpr (G == 1) { int v; std::memcpy(&v, p, 4); return _mm512_set1_epi32(v); }
        else if constexpr (G == 2) { long long v; std::memcpy(&v, p, 8); return _mm512_set1_epi64(v); }
        else return _mm512_broadcast_i32x4(_mm_loadu_si128(static_cast<const __m128i*>(p)));
    }
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

// One tile of records, transposed. G = 1: 16 records, lane t = record t. G = 2 (4): 8 (4) records,
// lanes G * r + h = record r, lane h working on sub-block c + h * SUB / G in chain c, so 8 (4) records
// still fill the register. (Q4_K, G = 2: chain c = sub-blocks c, c + 4 in lanes h = 0, 1.)
// xq[b * STEPS + c * GPS + g][lane] = bytes 4g..4g+3 (int8) of the lane's sub-block in chain c;
// dx[b][lane] block scales; xs[b][m][lane] = (int16 sum of sub-block 2m, of 2m+1) over 32-element
// sub-blocks (Q4_K/Q5_K mins, the whole record in each lane); x32[b][c][lane] = -32 * sum of the lane's
// 16-element sub-block in chain c (Q6_K offset). Lanes past the tile's records are zero.
// The arrays are views, sized by the call's nb, into the caller's stack buffer (broadcast_carve): xs exists for
// Q4_K/Q5_K tiles only, x32 for Q6_K ones.
template <int G>
struct BroadcastTile {
    uint32_t (*xq)[16];
    float (*dx)[16];
    uint32_t (*xs)[4][16];
    int32_t (*x32)[16 / G][16];
};

// Bytes of one tile of nb blocks (every part a multiple of 64, so tiles carved in a row stay aligned).
template <int G>
constexpr int64_t broadcast_tile_bytes(int64_t nb, bool q6) {
    return nb * (QK_K / 4 / G) * 64 + nb * 64 + (q6 ? nb * (16 / G) * 64 : nb * 4 * 64);
}

// A tile at p (64-byte aligned, broadcast_tile_bytes free); advances p past it.
template <int G>
inline BroadcastTile<G> broadcast_carve(uint8_t*& p, int64_t nb, bool q6) {
    BroadcastTile<G> t{};
    t.xq = reinterpret_cast<uint32_t(*)[16]>(p);
    p += nb * (QK_K / 4 / G) * 64;
    t.dx = reinterpret_cast<float(*)[16]>(p);
    p += nb * 64;
    if (q6) {
        t.x32 = reinterpret_cast<int32_t(*)[16 / G][16]>(p);
        p += nb * (16 / G) * 64;
    } else {
        t.xs = reinterpret_cast<uint32_t(*)[4][16]>(p);
        p += nb * 4 * 64;
    }
    return t;
}

template <int G>
void broadcast_build_tile(const uint8_t* acts, const ActLayout& L, int64_t nb, int t0, int nt, bool q6, BroadcastTile<G>* tile) {
    constexpr int NV = 16 / G;
    const int sub = q6 ? 16 : 8, spb = QK_K / sub, gps = spb / 4, ch = sub / G;
    if constexpr (G == 1) {
        transpose_records(acts, L.stride, t0, nt, nb * QK_K / 4, tile->xq);
    } else {
        std::memset(tile->xq, 0, sizeof(tile->xq[0]) * nb * (QK_K / 4 / G));
        for (int t = 0; t < nt; ++t) {
            const uint8_t* rec = acts + static_cast<int64_t>(t0 + t) * L.stride;
            for (int64_t b = 0; b < nb; ++b)
                for (int c = 0; c < ch; ++c)
                    for (int g = 0; g < gps; ++g)
                        for (int h = 0; h < G; ++h)
                            std::memcpy(&tile->xq[b * (QK_K / 4 / G) + c * gps + g][G * t + h],
                                        rec + b * QK_K + (c + h * ch) * spb + 4 * g, 4);
        }
    }
    for (int t = 0; t < NV; ++t) {
        if (t >= nt) {
            for (int64_t b = 0; b < nb; ++b)
                for (int h = 0; h < G; ++h) {
                    const int l = G * t + h;
                    tile->dx[b][l] = 0.0f;
                    if (q6)
                        for (int c = 0; c < 16 / G; ++c) tile->x32[b][c][l] = 0;
                    else
                        for (int m = 0; m < 4; ++m) tile->xs[b][m][l] = 0;
                }
            continue;
        }
        const uint8_t* rec = acts + static_cast<int64_t>(t0 + t) * L.stride;
        const float* d = reinterpret_cast<const float*>(rec + L.d_off);
        const int16_t* s16 = reinterpret_cast<const int16_t*>(rec + L.sums_off);
        for (int64_t b = 0; b < nb; ++b) {
            const int16_t* s = s16 + 16 * b;
            for (int h = 0; h < G; ++h) {
                const int l = G * t + h;
                tile->dx[b][l] = d[b];
                if (q6) {
                    for (int c = 0; c < ch; ++c) tile->x32[b][c][l] = -32 * s[c + h * ch];
                } else {
                    for (int m = 0; m < 4; ++m) {  // 32-element sub-block 2m = per-16 sums 4m, 4m+1
                        const uint16_t lo = static_cast<uint16_t>(s[4 * m] + s[4 * m + 1]);
                        const uint16_t hi = static_cast<uint16_t>(s[4 * m + 2] + s[4 * m + 3]);
                        tile->xs[b][m][l] = lo | (uint32_t(hi) << 16);
                    }
                }
            }
        }
    }
}

// One weight block of one row, decoded for the broadcast kernel in its tile's order: step
// c * GPS + g holds G groups of 4 (G * 4 bytes, the broadcast unit), and sc[c * G + h] is the scale
// of lane h's sub-block in chain c.
struct BroadcastBlock {
    alignas(64) uint8_t q[QK_K];  // stored (unsigned) values
    alignas(64) int32_t sc[16];   // per sub-block scales (8 used for Q4_K/Q5_K)
    alignas(16) int16_t mn[8];    // Q4_K/Q5_K mins: int32 m holds the pair (2m, 2m+1)
    float dw, dm;
};

// Byte offset in BroadcastBlock::q of broadcast step st (G groups of 4).
template <int G>
constexpr int broadcast_step_offset(int st) {
    return G == 4 ? 64 * (st % 4) + 16 * (st / 4) : 4 * G * st;
}

// Element-order values (q[k] = elements 64k..64k+63) into the tile's order. G = 2, output zmm k:
// Q4_K/Q5_K chain k (sub-blocks k, k + 4), Q6_K chains 2k, 2k + 1 (sub-blocks 2k + e, 2k + e + 8); either
// way dword 2i + h is dword i of the first-half (h = 0, in q[k / 2]) or second-half (h = 1, in
// q[2 + k / 2]) values at offset 8 * (k % 2): one permutation serves both.
template <int G>
inline void broadcast_store_q(const KBlock& w, BroadcastBlock* o) {
    if constexpr (G == 1) {
        for (int k = 0; k < 4; ++k) _mm512_store_si512(o->q + 64 * k, w.q[k]);
    } else if constexpr (G == 4) {
        // Lane h = q[h]: a 4x4 dword transpose within each 128-bit chunk; output k, chunk m holds dword k
        // of chunk m of q[0..3] (step st at 64 * (st % 4) + 16 * (st / 4), see broadcast_step_offset).
        const __m512i t0 = _mm512_unpacklo_epi32(w.q[0], w.q[1]), t1 = _mm512_unpackhi_epi32(w.q[0], w.q[1]);
        const __m512i t2 = _mm512_unpacklo_epi32(w.q[2], w.q[3]), t3 = _mm512_unpackhi_epi32(w.q[2], w.q[3]);
        _mm512_store_si512(o->q, _mm512_unpacklo_epi64(t0, t2));
        _mm512_store_si512(o->q + 64, _mm512_unpackhi_epi64(t0, t2));
        _mm512_store_si512(o->q + 128, _mm512_unpacklo_epi64(t1, t3));
        _mm512_store_si512(o->q + 192, _mm512_unpackhi_epi64(t1, t3));
    } else {
        alignas(64) static const int32_t kIdx[2][16] = {
            {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23},
            {8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31}};
        for (int k = 0; k < 4; ++k)
            _mm512_store_si512(o->q + 64 * k, _mm512_permutex2var_epi32(w.q[k / 2], _mm512_load_si512(kIdx[k % 2]), w.q[2 + k / 2]));
    }
}

template <int G>
inline void broadcast_decode_k4(const uint8_t* s, BroadcastBlock* o) {  // Q4_K/Q5_K 6-bit scales and mins
    uint64_t sc, mn;
    q4k_unpack(s, &sc, &mn);
    __m256i sc32 = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(sc)));
    if constexpr (G == 2) sc32 = _mm256_permutevar8x32_epi32(sc32, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    if constexpr (G == 4) sc32 = _mm256_permutevar8x32_epi32(sc32, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
    _mm256_store_si256(reinterpret_cast<__m256i*>(o->sc), sc32);
    _mm_store_si128(reinterpret_cast<__m128i*>(o->mn), _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(mn))));
}

template <int G, typename B>  // Q4_K or Q5_K
inline void broadcast_decode(const B* b, BroadcastBlock* o) {
    o->dw = _cvtsh_ss(b->d);
    o->dm = _cvtsh_ss(b->dmin);
    broadcast_decode_k4<G>(b->scales, o);
    KBlock w;
    k4_values(b, w.q);
    broadcast_store_q<G>(w, o);
}

template <int G>
inline void broadcast_decode(const BlockQ6K* b, BroadcastBlock* o) {
    KBlock w;
    decode(b, &w);
    __m512i sc32 = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b->scales)));
    if constexpr (G == 2) sc32 = _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15), sc32);
    if constexpr (G == 4) sc32 = _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), sc32);
    _mm512_store_si512(o->sc, sc32);
    o->dw = w.dw;
    o->dm = 0.0f;
    broadcast_store_q<G>(w, o);
}

// One weight block (blk[i]: block b of row group row i) against one broadcast tile: acc[i] gains the
// block's canonical float steps for every lane.
template <typename Block, int G>
inline void broadcast_block(const BroadcastBlock* blk, const BroadcastTile<G>& tile, int64_t b, BroadcastVec::F* acc) {
    using V = BroadcastVec;
    constexpr bool kQ6 = std::is_same<Block, BlockQ6K>::value;
    constexpr int BROADCAST_ROWS = kQ6 ? BROADCAST_ROWS_Q6 : BROADCAST_ROWS_K4;
    constexpr int SUB = kQ6 ? 16 : 8;    // sub-blocks per block
    constexpr int GPS = QK_K / 4 / SUB;  // 4-element groups per sub-block
    constexpr int CH = SUB / G;          // chains per block
    constexpr int STEPS = QK_K / 4 / G;  // broadcast steps per block
    typename V::I i1[BROADCAST_ROWS];
    for (int i = 0; i < BROADCAST_ROWS; ++i) i1[i] = V::zero();
    const uint32_t(*xq)[16] = tile.xq + b * STEPS;
    for (int c = 0; c < CH; ++c) {
        typename V::I s[BROADCAST_ROWS][2];
        for (int i = 0; i < BROADCAST_ROWS; ++i) {
            s[i][0] = kQ6 ? V::load(tile.x32[b][c]) : V::zero();
            s[i][1] = V::zero();
        }
        for (int g = 0; g < GPS; ++g) {
            const int step = c * GPS + g;
            const typename V::I xv = V::load(xq[step]);
            for (int i = 0; i < BROADCAST_ROWS; ++i)
                s[i][g & 1] = V::dpbusd(s[i][g & 1], V::template bcast<G>(blk[i].q + broadcast_step_offset<G>(step)), xv);
        }
        for (int i = 0; i < BROADCAST_ROWS; ++i)
            i1[i] = V::add(i1[i], V::mullo(V::add(s[i][0], s[i][1]), V::template bcast<G>(&blk[i].sc[G * c])));
    }
    if constexpr (G >= 2)  // the parts of each record: every lane of it holds the record's total
        for (int i = 0; i < BROADCAST_ROWS; ++i) i1[i] = V::add(i1[i], _mm512_shuffle_epi32(i1[i], _MM_PERM_CDAB));
    if constexpr (G == 4)
        for (int i = 0; i < BROADCAST_ROWS; ++i) i1[i] = V::add(i1[i], _mm512_shuffle_epi32(i1[i], _MM_PERM_BADC));
    const typename V::F dx = V::fload(tile.dx[b]);
    for (int i = 0; i < BROADCAST_ROWS; ++i) {
        acc[i] = V::fmadd(V::mul(V::fset1(blk[i].dw), dx), V::cvt(i1[i]), acc[i]);
        if constexpr (!kQ6) {
            typename V::I i2 = V::zero();
            for (int m = 0; m < 4; ++m) i2 = V::dpwssd(i2, V::load(tile.xs[b][m]), V::template bcast<1>(blk[i].mn + 2 * m));
            acc[i] = V::fnmadd(V::mul(V::fset1(blk[i].dm), dx), V::cvt(i2), acc[i]);
        }
    }
}

// Rows rg .. rg + nr of one tile's accumulators out (vectors t0 .. t0 + nt).
template <int G, int BROADCAST_ROWS>
inline void broadcast_store(const BroadcastVec::F* acc, int64_t rg, int nr, int t0, int nt, float* y, int64_t ldy, int pair) {
    for (int i = 0; i < nr; ++i) {
        alignas(64) float tmp[16];
        BroadcastVec::fstore(tmp, acc[i]);
        if constexpr (G > 1)
            for (int t = 0; t < 16 / G; ++t) tmp[t] = tmp[G * t];
        store_out(y, ldy, rg + i, t0, tmp, nt, pair);
    }
}

// Block b of the BROADCAST_ROWS rows from rg (rows past nr repeat row rg) into blk, prefetching the same block
// two row groups on: with few tiles the sweep is DRAM-bound, and this distance made 8-token verification
// 18% faster than 2 blocks ahead in the row.
template <int G, typename Block>
inline void broadcast_decode_rows(const Block* W, int64_t nb, int64_t rg, int nr, int64_t b, BroadcastBlock* blk) {
    constexpr int BROADCAST_ROWS = std::is_same<Block, BlockQ6K>::value ? BROADCAST_ROWS_Q6 : BROADCAST_ROWS_K4;
    for (int i = 0; i < BROADCAST_ROWS; ++i) {
        const Block* wb = W + (rg + (i < nr ? i : 0)) * nb + b;
        const char* ahead = reinterpret_cast<const char*>(wb + 2 * BROADCAST_ROWS * nb);
        for (size_t off = 0; off < sizeof(Block); off += 64) _mm_prefetch(ahead + off, _MM_HINT_T0);
        broadcast_decode<G>(wb, &blk[i]);
    }
}

// Rows [r0, r1) against broadcast tiles: vectors t0 + k * (16 / G) .. of tiles[k], k < n_tiles (the last one
// holds nt_last vectors). With one tile each block is decoded as it is used. With several, each row
// group's blocks are decoded once into a buffer (L1/L2) and every tile sweeps them: the decode (11% of the
// 512-token prefill, measured by skipping it) and the weights' trip from memory are paid once per group
// of tiles, not once per tile. Then, per row group while its weights are still in cache, the remainder
// tile (if any) through the reducing kernel.
// noinline: inlined into broadcast_call, GCC 12 spilled the chain accumulators of the two-lane tile (Q6_K, 8
// records: 720-750 us against 505-545 for 1536x8960, one thread).
template <typename Block, int G>
__attribute__((noinline)) void broadcast_rows(const Block* W, int64_t nb, int64_t r0, int64_t r1, const BroadcastTile<G>* tiles, int n_tiles, int t0,
             int nt_last, BroadcastBlock (*dec)[std::is_same<Block, BlockQ6K>::value ? BROADCAST_ROWS_Q6 : BROADCAST_ROWS_K4],
             const ReduceTile* rest, int rest_t0, int rest_nt, float* y, int64_t ldy, int pair) {
    using V = BroadcastVec;
    constexpr bool kQ6 = std::is_same<Block, BlockQ6K>::value;
    constexpr int BROADCAST_ROWS = kQ6 ? BROADCAST_ROWS_Q6 : BROADCAST_ROWS_K4;
    constexpr int NV = 16 / G;
    constexpr GGMLType kType = kQ6 ? GGMLType::Q6_K : std::is_same<Block, BlockQ5K>::value ? GGMLType::Q5_K : GGMLType::Q4_K;
    BroadcastBlock blk[BROADCAST_ROWS];
    for (int64_t rg = r0; rg < r1; rg += BROADCAST_ROWS) {
        const int nr = r1 - rg < BROADCAST_ROWS ? static_cast<int>(r1 - rg) : BROADCAST_ROWS;
        typename V::F acc[BROADCAST_ROWS];
        if (G != 1 || n_tiles == 1) {  // (G = 2, 4: always one tile)
            for (int i = 0; i < BROADCAST_ROWS; ++i) acc[i] = V::fzero();
            for (int64_t b = 0; b < nb; ++b) {
                broadcast_decode_rows<G>(W, nb, rg, nr, b, blk);
                broadcast_block<Block, G>(blk, tiles[0], b, acc);
            }
            broadcast_store<G, BROADCAST_ROWS>(acc, rg, nr, t0, nt_last, y, ldy, pair);
        } else {
            for (int64_t b = 0; b < nb; ++b) broadcast_decode_rows<G>(W, nb, rg, nr, b, dec[b]);
            for (int k = 0; k < n_tiles; ++k) {
                for (int i = 0; i < BROADCAST_ROWS; ++i) acc[i] = V::fzero();
                for (int64_t b = 0; b < nb; ++b) broadcast_block<Block, G>(dec[b], tiles[k], b, acc);
                broadcast_store<G, BROADCAST_ROWS>(acc, rg, nr, t0 + k * NV, k + 1 == n_tiles ? nt_last : NV, y, ldy, pair);
            }
        }
        if (rest) reduce_kquant_tile(kType, reinterpret_cast<const uint8_t*>(W), nb, rg, rg + nr, *rest, rest_t0, rest_nt, y, ldy, pair);
    }
}

static_assert(broadcast_tile_bytes<1>(BROADCAST_MAX_KBLOCKS, true) <= BROADCAST_STACK_BYTES && broadcast_tile_bytes<1>(BROADCAST_MAX_KBLOCKS, false) <= BROADCAST_STACK_BYTES,
              "one tile of the largest K fits");

// n_rec >= 9 records. Tiles of 16 go through the broadcast kernel; a remainder of up to 8 through the
// reducing kernel (cheaper than a mostly idle tile), a larger one (or a call of 9-15) as one more,
// padded, tile.
template <typename Block, int G>
void broadcast_call(const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec, float* y,
               int64_t ldy, GGMLType wt, int pair) {
    constexpr int NV = 16 / G;
    constexpr bool kQ6 = std::is_same<Block, BlockQ6K>::value;
    constexpr int BROADCAST_ROWS = kQ6 ? BROADCAST_ROWS_Q6 : BROADCAST_ROWS_K4;
    const int64_t nb = K / QK_K;
    const ActLayout L = act_layout(wt, K);
    const Block* Wb = reinterpret_cast<const Block*>(W);
    int n_bc = n_rec / NV, rest = n_rec % NV;
    if (rest > (G == 1 ? BROADCAST_MAX_REDUCED_REST : G == 2 ? BROADCAST_G2_MAX_REST : 0) || n_bc == 0) {
        ++n_bc;
        rest = 0;
    }
    const int t_rest = n_bc * NV;
    ReduceTile rest_tile;
    if (rest) reduce_build_tile(acts, L, nb, t_rest, rest, &rest_tile);
    alignas(64) uint8_t buf[BROADCAST_STACK_BYTES];
    const int TG = G == 1 ? tiles_per_decode(n_bc, broadcast_tile_bytes<G>(nb, kQ6), nb * BROADCAST_ROWS * static_cast<int64_t>(sizeof(BroadcastBlock))) : 1;
    uint8_t* p = buf;
    BroadcastTile<G> tiles[BROADCAST_TILE_GROUP];
    for (int k = 0; k < TG; ++k) tiles[k] = broadcast_carve<G>(p, nb, kQ6);
    auto* dec = TG > 1 ? reinterpret_cast<BroadcastBlock(*)[BROADCAST_ROWS]>(p) : nullptr;
    for (int k0 = 0; k0 < n_bc; k0 += TG) {
        const int n = n_bc - k0 < TG ? n_bc - k0 : TG;
        int nt_last = NV;
        for (int k = 0; k < n; ++k) {
            const int t0 = (k0 + k) * NV, nt = n_rec - t0 < NV ? n_rec - t0 : NV;
            broadcast_build_tile<G>(acts, L, nb, t0, nt, kQ6, &tiles[k]);
            nt_last = nt;
        }
        const bool last = k0 + n == n_bc;
        broadcast_rows<Block, G>(Wb, nb, r0, r1, tiles, n, k0 * NV, nt_last, dec, last && rest ? &rest_tile : nullptr, t_rest, rest,
                          y, ldy, pair);
    }
}

}  // namespace

void broadcast_kquant(GGMLType wt, int G, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts,
                      int n_rec, float* y, int64_t ldy, int pair) {
    if (G == 1) {
        if (wt == GGMLType::Q4_K) broadcast_call<BlockQ4K, 1>(W, K, r0, r1, acts, n_rec, y, ldy, wt, pair);
        else if (wt == GGMLType::Q5_K) broadcast_call<BlockQ5K, 1>(W, K, r0, r1, acts, n_rec, y, ldy, wt, pair);
        else broadcast_call<BlockQ6K, 1>(W, K, r0, r1, acts, n_rec, y, ldy, wt, pair);
    } else if (G == 2) {
        if (wt == GGMLType::Q4_K) broadcast_call<BlockQ4K, 2>(W, K, r0, r1, acts, n_rec, y, ldy, wt, pair);
        else if (wt == GGMLType::Q5_K) broadcast_call<BlockQ5K, 2>(W, K, r0, r1, acts, n_rec, y, ldy, wt, pair);
        else broadcast_call<BlockQ6K, 2>(W, K, r0, r1, acts, n_rec, y, ldy, wt, pair);
    } else {
        broadcast_call<BlockQ6K, 4>(W, K, r0, r1, acts, n_rec, y, ldy, wt, pair);  // Q6_K only (plan.h)
    }
}


}  // namespace lg::quant::avx512

#endif

// x86 AVX2 kernels for CPUs without AVX-512 VNNI: integer block sums with maddubs/madd, float
// steps in scalar code in the canonical order of quant_blocks.h, so results are bit-identical to
// quant_scalar.cpp. Weight-stationary: a block is decoded once per tile of vectors. No threads. The K-quant
// kernels and the dispatch (matmul_simd) are here; the legacy 32-block kernels in quant_avx2_legacy.cpp.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "quant/x86/avx2.h"

#if LG_SIMD_AVX2

namespace lg {

using namespace quant::avx2;

namespace {

// ---- K-quants -------------------------------------------------------------------------------
// q[k]: unsigned values of elements 32k..32k+31; sv[k]: int16 scale vector for maddubs output
// of q[k] (lanes 0..7: per-16 scale 2k, lanes 8..15: 2k+1).
struct KBlock {
    __m256i q[8], sv[8];
    __m256i sc16;  // Q6_K: the 16 scales as int16 (the offset term's partner in madd)
    __m128i mn16;  // Q4_K/Q5_K: the 8 mins as int16 (the activation sums' partner in madd)
    float dw, dm;
};

// sv[k] from the int16 scales of a 16-lane vector s16 (lane i = scale of elements 16i..16i+15):
// lanes 0..7 = s16 lane 2k, lanes 8..15 = lane 2k + 1.
inline void scales_from16(__m256i s16, KBlock* o) {
    const __m256i lo = _mm256_permute2x128_si256(s16, s16, 0x00), hi = _mm256_permute2x128_si256(s16, s16, 0x11);
    for (int k = 0; k < 8; ++k) {
        const int a = (2 * k) % 8, b = (2 * k + 1) % 8;  // int16 lanes within the 128-bit half
        const __m256i idx = _mm256_setr_epi8(2 * a, 2 * a + 1, 2 * a, 2 * a + 1, 2 * a, 2 * a + 1, 2 * a, 2 * a + 1, 2 * a,
                                             2 * a + 1, 2 * a, 2 * a + 1, 2 * a, 2 * a + 1, 2 * a, 2 * a + 1, 2 * b, 2 * b + 1,
                                             2 * b, 2 * b + 1, 2 * b, 2 * b + 1, 2 * b, 2 * b + 1, 2 * b, 2 * b + 1, 2 * b,
                                             2 * b + 1, 2 * b, 2 * b + 1, 2 * b, 2 * b + 1);
        o->sv[k] = _mm256_shuffle_epi8(k < 4 ? lo : hi, idx);
    }
}

// The 8 scales and 8 mins of a Q4_K/Q5_K block (q4k_scale_min for all j at once): with the 12 bytes as
// dwords u0, u1, u2, scales 0-3 = u0 & 63 (per byte), mins 0-3 = u1 & 63, scales 4-7 = (u2 & 15) |
// (u0 >> 6) << 4, mins 4-7 = (u2 >> 4 & 15) | (u1 >> 6) << 4.
inline void q4k_common(uint16_t d, uint16_t dmin, const uint8_t* scales, const uint8_t* qs, KBlock* o) {
    o->dw = _cvtsh_ss(d);
    o->dm = _cvtsh_ss(dmin);
    uint32_t u[3];
    std::memcpy(u, scales, 12);
    const uint32_t m6 = 0x3f3f3f3fu, k4 = 0x0f0f0f0fu, m2 = 0x03030303u;
    const uint32_t sc_lo = u[0] & m6, mn_lo = u[1] & m6;
    const uint32_t sc_hi = (u[2] & k4) | (((u[0] >> 6) & m2) << 4), mn_hi = ((u[2] >> 4) & k4) | (((u[1] >> 6) & m2) << 4);
    const __m128i sc8 = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, static_cast<int>(sc_hi), static_cast<int>(sc_lo)));
    o->mn16 = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, static_cast<int>(mn_hi), static_cast<int>(mn_lo)));
    // per-32 scales to per-16 lanes: scale j covers 16-lanes 2j and 2j + 1
    scales_from16(_mm256_set_m128i(_mm_unpackhi_epi16(sc8, sc8), _mm_unpacklo_epi16(sc8, sc8)), o);
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    for (int j = 0; j < 4; ++j) {
        __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * j));
        o->q[2 * j] = _mm256_and_si256(v, m4);
        o->q[2 * j + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    }
}

void decode(const BlockQ4K* b, KBlock* o) { q4k_common(b->d, b->dmin, b->scales, b->qs, o); }

void decode(const BlockQ5K* b, KBlock* o) {
    q4k_common(b->d, b->dmin, b->scales, b->qs, o);
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh)), one = _mm256_set1_epi8(1);
    for (int s = 0; s < 8; ++s) {  // bit s of qh[l] is bit 4 of element 32s + l
        __m256i bit = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(s)), one);
        o->q[s] = _mm256_or_si256(o->q[s], _mm256_slli_epi16(bit, 4));
    }
}

__attribute__((always_inline)) inline void decode(const BlockQ6K* b, KBlock* o) {
    o->dw = _cvtsh_ss(b->d);
    o->dm = 0.0f;
    o->sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b->scales)));
    scales_from16(o->sc16, o);
    const __m256i m4 = _mm256_set1_epi8(0x0f), m3 = _mm256_set1_epi8(3);
    for (int h = 0; h < 2; ++h) {  // element 128h + 32s + l, s = 0..3
        const __m256i ql0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->ql + 64 * h));
        const __m256i ql1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->ql + 64 * h + 32));
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh + 32 * h));
        const __m256i lo[4] = {_mm256_and_si256(ql0, m4), _mm256_and_si256(ql1, m4),
                               _mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                               _mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4)};
        for (int s = 0; s < 4; ++s) {
            __m256i hi = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * s)), m3);
            o->q[4 * h + s] = _mm256_or_si256(lo[s], _mm256_slli_epi16(hi, 4));
        }
    }
}

// ---- Q4_K (every call) and Q6_K (from 4 records) row-lane kernels, in groups of up to 16 records ---
// A ymm holds 8 weight rows, one dword lane each, and 4 activation bytes are broadcast, so each block's
// decode serves every record and no lane is reduced (the per-block horizontal sums of reduce_kquant
// are what made this path slow). Per (row, record, block) it forms the same exact integers
// (i1 = sum_j sc_j S_j, i2 = sum_j mn_j xsum_j) and applies the canonical float steps, so its bits are
// the scalar path's. S_j: maddubs gives int16 pairs of at most 2 * 15 * 127, 8 of them summed stay
// below 2^15, and madd with (sc_j, sc_j) per dword gives sc_j * S_j.
// Measured (1.5B, x86-64-v3 build, 2 threads, after a 16-token prompt, alternating per forward in one
// process, medians of 10, logits bit-identical): T = 1 35.78 ms through reduce_kquant, 25.57 here;
// T = 2 66.90 / 48.41; T = 4 110.26 / 83.52. Extended from 8 to 16 records per pass and to every call in
// groups of 16: T = 8 224.14 / 147.41 ms, T = 16 428.61 / 275.88 ms; prefill of 256 tokens 43.7 / 74 tok/s.
constexpr int ROWLANE_CHUNK = 4;     // records per pass over a decoded block (registers)
// Q4_K calls from ROWLANE_PAIR_MIN_RECORDS records on run two row groups a pass (rowlane_rows_pair, rowlane_block_pair), ROWLANE_PAIR_CHUNK
// records at a time: a broadcast activation dword serves both groups. Measured on a Zen 3 core (no
// AVX-512), outputs bit-identical, separate processes in rotated order, fastest of each process: 4 of
// the 1.5B's ffn_up matrices, 64 records (32 tokens) 41.97 ms against 47.23 (median ratio 0.812 over 8
// rounds); 16 records equal (12.21 / 12.06 ms, 12 rounds); 4 records slower (4.80 / 3.93 ms). Prefill
// of 512 tokens on 2 threads: 32.0-36.0 tok/s against 28.0-30.1 (3 alternating rounds).
constexpr int ROWLANE_PAIR_CHUNK = 4;
constexpr int ROWLANE_PAIR_MIN_RECORDS = 32;

struct RowlaneQ4K {
    __m256i raw[32];  // dword d of qs, one row per lane
    __m256i sc16[8];  // sc_j | sc_j << 16
    __m256i mn[4];    // mn_2m | mn_2m+1 << 16
    __m256 dw, dm;
};

// 8 halves (low 16 bits of each dword of v) as floats.
inline __m256 halves_to_ps(__m256i v) {
    const __m256i p = _mm256_packus_epi32(_mm256_and_si256(v, _mm256_set1_epi32(0xffff)), _mm256_setzero_si256());
    return _mm256_cvtph_ps(_mm256_castsi256_si128(_mm256_permute4x64_epi64(p, 0x08)));
}

inline void rowlane_decode(const BlockQ4K* const* rows, RowlaneQ4K* o) {
    const void* p[ROWLANE_ROWS];  // header dwords: d | dmin << 16, then the scales as a, b, c
    for (int i = 0; i < ROWLANE_ROWS; ++i) p[i] = rows[i];
    __m256i hd[4];
    dwords4_of_rows(p, hd);
    const __m256i dd = hd[0], a = hd[1], b = hd[2], c = hd[3];
    o->dw = halves_to_ps(dd);
    o->dm = halves_to_ps(_mm256_srli_epi32(dd, 16));
    // q4k_scale_min in 8 lanes: j < 4: sc = a_j & 63, mn = b_j & 63; j >= 4 (k = j - 4): sc = (c_k & 15) |
    // (a_k >> 6) << 4, mn = (c_k >> 4) | (b_k >> 6) << 4 (x_k = byte k of x).
    const __m256i m63 = _mm256_set1_epi32(63), m15 = _mm256_set1_epi32(15), m48 = _mm256_set1_epi32(0x30);
    __m256i sc[8], mn[8];
    for (int k = 0; k < 4; ++k) {
        sc[k] = _mm256_and_si256(_mm256_srli_epi32(a, 8 * k), m63);
        mn[k] = _mm256_and_si256(_mm256_srli_epi32(b, 8 * k), m63);
        sc[4 + k] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(c, 8 * k), m15),
                                    _mm256_and_si256(_mm256_srli_epi32(a, 8 * k + 2), m48));
        mn[4 + k] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(c, 8 * k + 4), m15),
                                    _mm256_and_si256(_mm256_srli_epi32(b, 8 * k + 2), m48));
    }
    for (int j = 0; j < 8; ++j) o->sc16[j] = _mm256_or_si256(sc[j], _mm256_slli_epi32(sc[j], 16));
    for (int m = 0; m < 4; ++m) o->mn[m] = _mm256_or_si256(mn[2 * m], _mm256_slli_epi32(mn[2 * m + 1], 16));
    for (int g = 0; g < 4; ++g) {
        __m256i* r = o->raw + 8 * g;
        for (int i = 0; i < ROWLANE_ROWS; ++i) r[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[i]->qs + 32 * g));
        transpose8(r);
    }
}

// Activation dword d (4 bytes) of a record's block, broadcast: from the record itself, or (kExp) from a
// buffer of vectors broadcast once per call (rowlane_rows_one_token).
template <bool kExp>
inline __m256i xv(const int8_t* qx_block, const __m256i* xe_block, int d) {
    if constexpr (kExp) return _mm256_load_si256(xe_block + d);
    else return bcast4(qx_block + 4 * d);
}

// The integer steps of a row group, shared by rowlane_block and rowlane_block_pair: S_j accumulates the 4-product sums of
// a sub-block (dpbusd, or maddubs pairs in int16), then i1 += sc_j * S_j.
inline __m256i dot4_add(__m256i s, __m256i v, __m256i x) {
#if LG_AVX_VNNI
    return dpbusd(s, v, x);
#else
    return _mm256_add_epi16(s, _mm256_maddubs_epi16(v, x));
#endif
}

inline __m256i add_scaled(__m256i i1, __m256i s, __m256i sc16) {
#if LG_AVX_VNNI  // S_j in int32 lanes, times sc_j (the low half of sc16)
    return _mm256_add_epi32(i1, _mm256_mullo_epi32(s, _mm256_and_si256(sc16, _mm256_set1_epi32(0xffff))));
#else
    return _mm256_add_epi32(i1, _mm256_madd_epi16(s, sc16));
#endif
}

// A record's min sums of block b as broadcast int16 pairs: xs[m] = (xsum_2m, xsum_2m+1).
inline void min_sums(const uint8_t* rec, const ActLayout& L, int64_t b, __m256i* xs) {
    const int16_t* s16 = reinterpret_cast<const int16_t*>(rec + L.sums_off) + b * 16;
    for (int m = 0; m < 4; ++m) {
        const int16_t* q = s16 + 4 * m;
        xs[m] = _mm256_set1_epi32(static_cast<int>(static_cast<uint16_t>(q[0] + q[1]) |
                                                   (uint32_t(static_cast<uint16_t>(q[2] + q[3])) << 16)));
    }
}

// The float steps of block b for one record: acc += (dw d) i1, then acc -= (dm d) i2, i2 = sum_j mn_j xsum_j.
inline void rowlane_finish(const RowlaneQ4K& w, const __m256i* xs, __m256 d, __m256i i1, __m256& acc) {
    __m256i i2 = _mm256_setzero_si256();
    for (int m = 0; m < 4; ++m) i2 = _mm256_add_epi32(i2, _mm256_madd_epi16(w.mn[m], xs[m]));
    acc = _mm256_fmadd_ps(_mm256_mul_ps(w.dw, d), _mm256_cvtepi32_ps(i1), acc);
    acc = _mm256_fnmadd_ps(_mm256_mul_ps(w.dm, d), _mm256_cvtepi32_ps(i2), acc);
}

// Block b of the decoded rows against records t0 .. t0 + NR (acc[t] over the call's records);
// with kExp, record t's activations come pre-broadcast from xe[t] (64 vectors per block).
template <int NR, bool kExp = false>
inline void rowlane_block(const RowlaneQ4K& w, const uint8_t* acts, const ActLayout& L, int64_t b, int t0, __m256* acc,
                     const __m256i* const* xe = nullptr) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const int8_t* qx[NR];
    const __m256i* xb[NR];
    for (int t = 0; t < NR; ++t) {
        qx[t] = reinterpret_cast<const int8_t*>(acts + static_cast<int64_t>(t0 + t) * L.stride) + b * QK_K;
        xb[t] = kExp ? xe[t0 + t] + 64 * b : nullptr;
    }
    __m256i i1[NR];
    for (int t = 0; t < NR; ++t) i1[t] = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
        __m256i s[NR];
        for (int t = 0; t < NR; ++t) s[t] = _mm256_setzero_si256();
        const __m256i* q = w.raw + 8 * (j / 2);
#pragma GCC unroll 8
        for (int p = 0; p < 8; ++p) {
            const __m256i v = _mm256_and_si256(j % 2 ? _mm256_srli_epi16(q[p], 4) : q[p], m4);
            for (int t = 0; t < NR; ++t) s[t] = dot4_add(s[t], v, xv<kExp>(qx[t], xb[t], 8 * j + p));
        }
        for (int t = 0; t < NR; ++t) i1[t] = add_scaled(i1[t], s[t], w.sc16[j]);
    }
    for (int t = 0; t < NR; ++t) {
        const uint8_t* rec = acts + static_cast<int64_t>(t0 + t) * L.stride;
        __m256i xs[4];
        min_sums(rec, L, b, xs);
        rowlane_finish(w, xs, _mm256_set1_ps(reinterpret_cast<const float*>(rec + L.d_off)[b]), i1[t], acc[t0 + t]);
    }
}

// Two decoded row groups (16 rows) against records t0 .. t0 + NR: each broadcast activation dword
// serves two vpmaddubsw, one per group. Per group, the same integers and float steps as rowlane_block.
template <int NR>
inline void rowlane_block_pair(const RowlaneQ4K& w0, const RowlaneQ4K& w1, const uint8_t* acts, const ActLayout& L, int64_t b, int t0,
                      __m256* acc0, __m256* acc1) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const int8_t* qx[NR];
    for (int t = 0; t < NR; ++t) qx[t] = reinterpret_cast<const int8_t*>(acts + static_cast<int64_t>(t0 + t) * L.stride) + b * QK_K;
    __m256i i1a[NR], i1b[NR];
    for (int t = 0; t < NR; ++t) i1a[t] = i1b[t] = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
        __m256i sa[NR], sb[NR];
        for (int t = 0; t < NR; ++t) sa[t] = sb[t] = _mm256_setzero_si256();
        const __m256i* qa = w0.raw + 8 * (j / 2);
        const __m256i* qb = w1.raw + 8 * (j / 2);
#pragma GCC unroll 8
        for (int p = 0; p < 8; ++p) {
            const __m256i va = _mm256_and_si256(j % 2 ? _mm256_srli_epi16(qa[p], 4) : qa[p], m4);
            const __m256i vb = _mm256_and_si256(j % 2 ? _mm256_srli_epi16(qb[p], 4) : qb[p], m4);
            for (int t = 0; t < NR; ++t) {
                const __m256i x = bcast4(qx[t] + 4 * (8 * j + p));
                sa[t] = dot4_add(sa[t], va, x);
                sb[t] = dot4_add(sb[t], vb, x);
            }
        }
        for (int t = 0; t < NR; ++t) {
            i1a[t] = add_scaled(i1a[t], sa[t], w0.sc16[j]);
            i1b[t] = add_scaled(i1b[t], sb[t], w1.sc16[j]);
        }
    }
    for (int t = 0; t < NR; ++t) {
        const uint8_t* rec = acts + static_cast<int64_t>(t0 + t) * L.stride;
        __m256i xs[4];
        min_sums(rec, L, b, xs);
        const __m256 d = _mm256_set1_ps(reinterpret_cast<const float*>(rec + L.d_off)[b]);
        rowlane_finish(w0, xs, d, i1a[t], acc0[t0 + t]);
        rowlane_finish(w1, xs, d, i1b[t], acc1[t0 + t]);
    }
}

// One token's records (NR <= 2) are broadcast once per call (rowlane_rows_one_token; rowlane_block with kExp: the 64
// dwords of a block, each as a ymm), so vpmaddubsw takes them from memory and no broadcast is issued per
// row group. The same integers, so the same bits. Measured on a Zen 3 core (no AVX-512), where the
// one-token kernel is bound by its instructions: one cache-resident 8960x1536 matrix, one thread, medians
// of 200 calls, 10 alternating rounds: per-round ratio 0.934, fastest call 0.610 against 0.662 ms; the 1.5B
// one-token forward on 2 threads, separate processes in rotated order, 8 rounds: 0.876 (58-77 ms against
// 64-88). Extended to every row-lane call of up to 96 record-blocks (a 192 KB buffer, read from L2): the
// 4-token forward 1.148 of the time, 8 tokens 1.146 (6 rounds each), so only one token uses it.
constexpr int ROWLANE_ONE_TOKEN_MAX_KBLOCKS = 40;   // K <= 10240: 2 records x 40 blocks x 2 KB on the stack
// Where this kernel stands on a Zen 3 core (no AVX-512, no VNNI): tools/avx2_q4k_floor.cpp times one
// L1-resident block of 8 rows, one thread, 3 runs:
//   - rowlane_block<2, true> 57-64 ns;
//   - its 128 vpmaddubsw alone (with their loads, nibble masks and int16 adds) 48-50 ns, so the kernel is
//     1.20-1.33x its multiply floor;
//   - rowlane_decode 27-30 ns; decode and block together 84-90 ns, which is what the whole kernel takes on a
//     cache-resident 8960x1536 matrix (0.60 ms for 6720 blocks).
// A scratch loop feeding each loaded activation to two row groups (256 vpmaddubsw) took 123-135 ns against
// 103-111 ns for two passes: 16 ymm registers are too few and it spills. The two int8 terms per activation
// that the correctness gate needs (one term fails top-1) set this floor.
// Measured without gain, all bit-identical, one thread, in-process alternation, ratios of the median:
//   - scales placed with vpshufb (about 50 fewer instructions a block): 0.988-1.007;
//   - the 8x8 transposes without lane-crossing permutes (two 128-bit loads a register): T = 1 0.999,
//     T = 4 1.049;
//   - 16-byte pre-broadcast vectors read with vbroadcasti128: 0.993-0.997;
//   - block-major tiles of 16 row groups for 3-16 records, each block's activations broadcast once per tile:
//     T = 2, 4, 8 1.016, 1.015, 0.924 (fastest call 1.003, 0.983, 1.028); L2-resident attn_k 1.000.
// In the 2-thread one-token forward (two engines alternating in one process, 40 rounds): the prefetch two
// row groups ahead 1.004; prefetchnta instead of prefetcht0 (here and in reduce_rows8_q6k) 1.009.

// Q6_K, 8 rows one per lane: q[g] = stored values 4g .. 4g + 3 (0..63), so 16-element sub-block j is
// q[4j .. 4j + 3]; sc16[j] = (sc_j, sc_j) and scp[m] = (sc_2m, sc_2m+1) as int16 pairs per dword.
// S_j: two maddubs give int16 pairs of at most 2 * 2 * 63 * 127 < 2^15 before madd with (sc_j, sc_j);
// the offset enters as i1 -= 32 sum_j sc_j xsum_j (madd of scp with the record's int16 sum pairs), the
// same exact integer as the scalar path's.
struct RowlaneQ6K {
    __m256i q[QK_K / 4];
    __m256i sc16[QK_K / 16];
    __m256i scp[QK_K / 32];
    __m256 dw;
};

inline void rowlane_decode(const BlockQ6K* const* rows, RowlaneQ6K* o) {
    __m256i ql[32], qh[16];
    for (int g = 0; g < 4; ++g) {
        for (int i = 0; i < ROWLANE_ROWS; ++i) ql[8 * g + i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[i]->ql + 32 * g));
        transpose8(ql + 8 * g);
    }
    for (int g = 0; g < 2; ++g) {
        for (int i = 0; i < ROWLANE_ROWS; ++i) qh[8 * g + i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[i]->qh + 32 * g));
        transpose8(qh + 8 * g);
    }
    // Values 4g .. 4g + 3, h = g / 32, w4 = g % 32: the low (w4 < 16) or high nibbles of ql dword
    // 16h + w4 % 16, and bits 2k, 2k + 1 (k = w4 / 8) of each byte of qh dword 8h + w4 % 8 as bits 4, 5.
    const __m256i m0f = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30);
    for (int g = 0; g < QK_K / 4; ++g) {
        const int h = g / 32, w4 = g % 32, k = w4 / 8;
        const __m256i lo = w4 < 16 ? ql[16 * h + w4] : _mm256_srli_epi32(ql[16 * h + w4 - 16], 4);
        __m256i hi = qh[8 * h + w4 % 8];
        hi = k == 0 ? _mm256_slli_epi32(hi, 4) : k == 1 ? _mm256_slli_epi32(hi, 2) : k == 2 ? hi : _mm256_srli_epi32(hi, 2);
        o->q[g] = _mm256_or_si256(_mm256_and_si256(lo, m0f), _mm256_and_si256(hi, m30));
    }
    // Scales: c[k] lane i = scale bytes 4k .. 4k + 3 of row i.
    const void* p[ROWLANE_ROWS];
    for (int i = 0; i < ROWLANE_ROWS; ++i) p[i] = rows[i]->scales;
    __m256i c[4];
    dwords4_of_rows(p, c);
    const __m256i lo16 = _mm256_set1_epi32(0xffff);
    __m256i sc[QK_K / 16];
    for (int k = 0; k < 4; ++k)
        for (int m = 0; m < 4; ++m) {  // byte m of c[k], sign-extended
            sc[4 * k + m] = m == 3 ? _mm256_srai_epi32(c[k], 24) : _mm256_srai_epi32(_mm256_slli_epi32(c[k], 24 - 8 * m), 24);
            o->sc16[4 * k + m] = _mm256_or_si256(_mm256_and_si256(sc[4 * k + m], lo16), _mm256_slli_epi32(sc[4 * k + m], 16));
        }
    for (int m = 0; m < QK_K / 32; ++m) o->scp[m] = _mm256_or_si256(_mm256_and_si256(sc[2 * m], lo16), _mm256_slli_epi32(sc[2 * m + 1], 16));
    alignas(16) uint16_t d16[ROWLANE_ROWS];
    for (int i = 0; i < ROWLANE_ROWS; ++i) d16[i] = rows[i]->d;
    o->dw = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(d16)));
}

// Block b of the decoded Q6_K rows against records t0 .. t0 + NR.
template <int NR>
inline void rowlane_block(const RowlaneQ6K& w, const uint8_t* acts, const ActLayout& L, int64_t b, int t0, __m256* acc) {
    const int8_t* qx[NR];
    for (int t = 0; t < NR; ++t) qx[t] = reinterpret_cast<const int8_t*>(acts + static_cast<int64_t>(t0 + t) * L.stride) + b * QK_K;
    __m256i i1[NR];
    for (int t = 0; t < NR; ++t) i1[t] = _mm256_setzero_si256();
    for (int j = 0; j < QK_K / 16; ++j) {
        const __m256i* q = w.q + 4 * j;
#if LG_AVX_VNNI  // S_j in int32 lanes (at most 16 * 63 * 127), then times sc_j (sign-extended low half of sc16)
        const __m256i sc = _mm256_srai_epi32(_mm256_slli_epi32(w.sc16[j], 16), 16);
        for (int t = 0; t < NR; ++t) {
            const int8_t* x = qx[t] + 16 * j;
            __m256i s = dpbusd(_mm256_setzero_si256(), q[0], bcast4(x));
            s = dpbusd(s, q[1], bcast4(x + 4));
            s = dpbusd(s, q[2], bcast4(x + 8));
            s = dpbusd(s, q[3], bcast4(x + 12));
            i1[t] = _mm256_add_epi32(i1[t], _mm256_mullo_epi32(s, sc));
        }
#else
        for (int t = 0; t < NR; ++t) {
            const int8_t* x = qx[t] + 16 * j;
            const __m256i s01 = _mm256_add_epi16(_mm256_maddubs_epi16(q[0], bcast4(x)), _mm256_maddubs_epi16(q[1], bcast4(x + 4)));
            const __m256i s23 = _mm256_add_epi16(_mm256_maddubs_epi16(q[2], bcast4(x + 8)), _mm256_maddubs_epi16(q[3], bcast4(x + 12)));
            i1[t] = _mm256_add_epi32(i1[t], _mm256_add_epi32(_mm256_madd_epi16(s01, w.sc16[j]), _mm256_madd_epi16(s23, w.sc16[j])));
        }
#endif
    }
    for (int t = 0; t < NR; ++t) {
        const uint8_t* rec = acts + static_cast<int64_t>(t0 + t) * L.stride;
        const int16_t* s16 = reinterpret_cast<const int16_t*>(rec + L.sums_off) + b * 16;
        __m256i off = _mm256_setzero_si256();
        for (int m = 0; m < QK_K / 32; ++m) {
            int32_t pair;  // the int16 sums of sub-blocks 2m, 2m + 1
            std::memcpy(&pair, s16 + 2 * m, 4);
            off = _mm256_add_epi32(off, _mm256_madd_epi16(w.scp[m], _mm256_set1_epi32(pair)));
        }
        i1[t] = _mm256_sub_epi32(i1[t], _mm256_slli_epi32(off, 5));
        const __m256 d = _mm256_set1_ps(reinterpret_cast<const float*>(rec + L.d_off)[b]);
        acc[t0 + t] = _mm256_fmadd_ps(_mm256_mul_ps(w.dw, d), _mm256_cvtepi32_ps(i1[t]), acc[t0 + t]);
    }
}

// Calls of fewer records run reduce_rows8_q6k (below). History: the row-lane kernel took over from 4 records
// when the alternative was the per-block horizontal sums of reduce_kquant's loop: its decode (six 8x8
// transposes, the 6-bit assembly) cost more than those sums with 2 records. Measured then (1.5B, x86-64-v3
// build, 2 threads, after 1000 stream tokens, alternating per forward in one process, medians of 6, logits
// bit-identical), old Q6_K kernel / row-lane: T = 1 31.64 / 36.81 ms, T = 2 56.50 / 51.03, T = 3 78.16 /
// 68.18, T = 4 97.01 / 81.20, T = 8 176.81 / 146.02; prefill of 256 tokens 73.0-75.9 / 81.7-82.1 tok/s.
constexpr int ROWLANE_Q6K_MIN_RECORDS = 9;

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

// Sums of 8 int32 vectors in one: lane i = the sum of v[i]'s lanes (exact: integer adds, any order).
inline __m256i sum8(const __m256i* v) {
    const __m256i h0 = _mm256_hadd_epi32(v[0], v[1]), h1 = _mm256_hadd_epi32(v[2], v[3]);
    const __m256i h2 = _mm256_hadd_epi32(v[4], v[5]), h3 = _mm256_hadd_epi32(v[6], v[7]);
    const __m256i g0 = _mm256_hadd_epi32(h0, h1), g1 = _mm256_hadd_epi32(h2, h3);  // rows 0-3, 4-7, per half
    return _mm256_add_epi32(_mm256_permute2x128_si256(g0, g1, 0x21), _mm256_blend_epi32(g0, g1, 0xf0));
}

// Q6_K rows [r0, r1) ((r1 - r0) a multiple of 8) against NR < ROWLANE_Q6K_MIN_RECORDS records: each row is
// decoded and dotted as in reduce_kquant's loop, block by block, but a block's integer vector is not
// reduced on its own (a horizontal sum, a float fma through memory per block and record: a third of that
// loop's cycles in perf): the 8 rows' vectors of a record are summed into one vector (sum8, lane = row)
// and the float step runs for 8 rows at once, as in the row-lane kernels. The same integers and float
// steps, so the same bits. A row is read whole (up to REDUCE_ROWS8_BLOCKS blocks) before the next: 8 rows read 8
// blocks at a time took 2.5x the time (the loads stalled). Measured on a Zen 3 core (no AVX-512), one
// thread, separate processes in rotated order, 6 rounds, against that loop, outputs bit-identical: the
// 14 Q6_K ffn_down matrices of the 1.5B (K = 8960) one token (2 records) 0.774 of the time, the
// 151936-row output matrix 0.697; 2 tokens 0.578, 3 tokens 0.676 and 4 tokens 1.012 (4 rounds) of the
// row-lane kernel's time, hence ROWLANE_Q6K_MIN_RECORDS = 9. The 1.5B one-token forward on 2 threads: 0.895
// (6 rounds). REDUCE_ROWS8_PREFETCH: the prefetch distance in bytes ahead in the row (one block = 210 bytes).
constexpr int REDUCE_ROWS8_BLOCKS = 40;
constexpr int REDUCE_ROWS8_PREFETCH = 2048;

template <int NR>
void reduce_rows8_q6k(const BlockQ6K* W, int64_t nb, int64_t r0, int64_t r1, const uint8_t* acts, const ActLayout& L,
               float* y, int64_t ldy, int pair) {
    alignas(32) __m256i ibuf[REDUCE_ROWS8_BLOCKS][NR][ROWLANE_ROWS];
    alignas(32) float dwbuf[REDUCE_ROWS8_BLOCKS][ROWLANE_ROWS];
    KBlock dec;
    for (int64_t rg = r0; rg < r1; rg += ROWLANE_ROWS) {
        __m256 acc[NR];
        for (int t = 0; t < NR; ++t) acc[t] = _mm256_setzero_ps();
        for (int64_t b0 = 0; b0 < nb; b0 += REDUCE_ROWS8_BLOCKS) {
            const int nbc = nb - b0 < REDUCE_ROWS8_BLOCKS ? static_cast<int>(nb - b0) : REDUCE_ROWS8_BLOCKS;
            for (int i = 0; i < ROWLANE_ROWS; ++i) {
                const BlockQ6K* row = W + (rg + i) * nb + b0;
                for (int bb = 0; bb < nbc; ++bb) {
                    const char* ahead = reinterpret_cast<const char*>(row + bb) + REDUCE_ROWS8_PREFETCH;
                    for (int off = 0; off < static_cast<int>(sizeof(BlockQ6K)); off += 64) _mm_prefetch(ahead + off, _MM_HINT_T0);
                    decode(row + bb, &dec);
                    dwbuf[bb][i] = dec.dw;
                    for (int t = 0; t < NR; ++t) {
                        const uint8_t* rec = acts + static_cast<int64_t>(t) * L.stride;
                        const int8_t* qx = reinterpret_cast<const int8_t*>(rec) + (b0 + bb) * QK_K;
                        const int16_t* s16 = reinterpret_cast<const int16_t*>(rec + L.sums_off) + (b0 + bb) * 16;
                        __m256i a = _mm256_setzero_si256();
                        for (int k = 0; k < 8; ++k) {
                            const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qx + 32 * k));
                            a = _mm256_add_epi32(a, _mm256_madd_epi16(_mm256_maddubs_epi16(dec.q[k], x), dec.sv[k]));
                        }
                        const __m256i sx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s16));
                        ibuf[bb][t][i] = _mm256_sub_epi32(a, _mm256_slli_epi32(_mm256_madd_epi16(dec.sc16, sx), 5));
                    }
                }
            }
            for (int bb = 0; bb < nbc; ++bb) {
                const __m256 dw = _mm256_load_ps(dwbuf[bb]);
                for (int t = 0; t < NR; ++t) {
                    const float dx = reinterpret_cast<const float*>(acts + static_cast<int64_t>(t) * L.stride + L.d_off)[b0 + bb];
                    acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(dx)), _mm256_cvtepi32_ps(sum8(ibuf[bb][t])), acc[t]);
                }
            }
        }
        for (int t = 0; t < NR; t += pair) {
            const __m256 v = pair == 2 ? _mm256_add_ps(acc[t], acc[t + 1]) : acc[t];
            _mm256_storeu_ps(y + static_cast<int64_t>(t / pair) * ldy + rg, v);
        }
    }
}

template <typename Block>
void reduce_kquant(const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts, int n_rec, float* y,
                   int64_t ldy, GGMLType wt, int pair) {
    constexpr bool kQ6 = std::is_same<Block, BlockQ6K>::value;
    const int64_t nb = K / QK_K;
    const ActLayout L = act_layout(wt, K);
    // Q4_K rows, and Q6_K rows of calls from ROWLANE_Q6K_MIN_RECORDS records on, in groups of 8: the row-lane
    // kernel, ROWLANE_MAX_RECORDS records (even: pairs stay whole) a pass.
    if constexpr (!std::is_same<Block, BlockQ5K>::value) {
        if (!kQ6 || n_rec >= ROWLANE_Q6K_MIN_RECORDS) {
            const int64_t r8 = r0 + (r1 - r0) / ROWLANE_ROWS * ROWLANE_ROWS;
            if constexpr (std::is_same<Block, BlockQ4K>::value) {
                if (n_rec <= 2 && nb <= ROWLANE_ONE_TOKEN_MAX_KBLOCKS) {
                    if (n_rec == 2) rowlane_rows_one_token<2>(reinterpret_cast<const Block*>(W), nb, r0, r8, acts, L, y, ldy, pair);
                    else rowlane_rows_one_token<1>(reinterpret_cast<const Block*>(W), nb, r0, r8, acts, L, y, ldy, pair);
                    r0 = r8;
                }
            }
            if constexpr (std::is_same<Block, BlockQ4K>::value) {
                if (n_rec >= ROWLANE_PAIR_MIN_RECORDS) {
                    const int64_t r16 = r0 + (r8 - r0) / (2 * ROWLANE_ROWS) * (2 * ROWLANE_ROWS);
                    for (int g0 = 0; g0 < n_rec && r0 < r16; g0 += ROWLANE_MAX_RECORDS)
                        rowlane_rows_pair(reinterpret_cast<const BlockQ4K*>(W), nb, r0, r16, acts + static_cast<int64_t>(g0) * L.stride, L,
                                 n_rec - g0 < ROWLANE_MAX_RECORDS ? n_rec - g0 : ROWLANE_MAX_RECORDS, y + static_cast<int64_t>(g0 / pair) * ldy,
                                 ldy, pair);
                    r0 = r16;
                }
            }
            for (int g0 = 0; g0 < n_rec && r0 < r8; g0 += ROWLANE_MAX_RECORDS)
                rowlane_rows(reinterpret_cast<const Block*>(W), nb, r0, r8, acts + static_cast<int64_t>(g0) * L.stride, L,
                        n_rec - g0 < ROWLANE_MAX_RECORDS ? n_rec - g0 : ROWLANE_MAX_RECORDS, y + static_cast<int64_t>(g0 / pair) * ldy,
                        ldy, pair);
            r0 = r8;
        }
        if (kQ6 && n_rec < ROWLANE_Q6K_MIN_RECORDS) {
            const int64_t r8 = r0 + (r1 - r0) / ROWLANE_ROWS * ROWLANE_ROWS;
            const BlockQ6K* W6 = reinterpret_cast<const BlockQ6K*>(W);
            switch (n_rec) {
                case 1: reduce_rows8_q6k<1>(W6, nb, r0, r8, acts, L, y, ldy, pair); break;
                case 2: reduce_rows8_q6k<2>(W6, nb, r0, r8, acts, L, y, ldy, pair); break;
                case 3: reduce_rows8_q6k<3>(W6, nb, r0, r8, acts, L, y, ldy, pair); break;
                case 4: reduce_rows8_q6k<4>(W6, nb, r0, r8, acts, L, y, ldy, pair); break;
                case 5: reduce_rows8_q6k<5>(W6, nb, r0, r8, acts, L, y, ldy, pair); break;
                case 6: reduce_rows8_q6k<6>(W6, nb, r0, r8, acts, L, y, ldy, pair); break;
                case 7: reduce_rows8_q6k<7>(W6, nb, r0, r8, acts, L, y, ldy, pair); break;
                default: reduce_rows8_q6k<8>(W6, nb, r0, r8, acts, L, y, ldy, pair); break;
            }
            r0 = r8;
        }
    }
    KBlock dec;
    for (int t0 = 0; t0 < n_rec; t0 += R_TILE) {
        const int nt = n_rec - t0 < R_TILE ? n_rec - t0 : R_TILE;
        for (int64_t r = r0; r < r1; ++r) {
            const Block* row = reinterpret_cast<const Block*>(W) + r * nb;
            float acc[R_TILE] = {};
            for (int64_t b = 0; b < nb; ++b) {
                decode(row + b, &dec);
                for (int t = 0; t < nt; ++t) {
                    const uint8_t* rec = acts + static_cast<int64_t>(t0 + t) * L.stride;
                    const int8_t* qx = reinterpret_cast<const int8_t*>(rec) + b * QK_K;
                    const int16_t* s16 = reinterpret_cast<const int16_t*>(rec + L.sums_off) + b * 16;
                    const float dx = reinterpret_cast<const float*>(rec + L.d_off)[b];
                    __m256i a = _mm256_setzero_si256();
                    for (int k = 0; k < 8; ++k) {
                        __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qx + 32 * k));
                        a = _mm256_add_epi32(a, _mm256_madd_epi16(_mm256_maddubs_epi16(dec.q[k], x), dec.sv[k]));
                    }
                    // The offset and min terms in vector form: the same exact integers as the scalar
                    // loops (|s16| <= 16 * 127, so its pair sums fit int16; every int32 step is exact).
                    if constexpr (kQ6) {  // values were stored as q = v + 32: i1 -= 32 sum_k sc_k s16_k
                        const __m256i sx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s16));
                        a = _mm256_sub_epi32(a, _mm256_slli_epi32(_mm256_madd_epi16(dec.sc16, sx), 5));
                        acc[t] = std::fma(dec.dw * dx, static_cast<float>(hsum(a)), acc[t]);
                    } else {
                        const int32_t i1 = hsum(a);
                        const __m128i ps = _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s16)),
                                                          _mm_loadu_si128(reinterpret_cast<const __m128i*>(s16 + 8)));
                        const int32_t i2 = hsum128(_mm_madd_epi16(dec.mn16, ps));
                        acc[t] = std::fma(dec.dw * dx, static_cast<float>(i1), acc[t]);
                        acc[t] = std::fma(-(dec.dm * dx), static_cast<float>(i2), acc[t]);
                    }
                }
            }
            store_out(y, ldy, r, t0, acc, nt, pair);
        }
    }
}

}  // namespace

bool matmul_simd(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* act_buf,
                 const float* x, int n_rec, float* y, int64_t ldy, int pair) {
    switch (wt) {
        case GGMLType::Q4_K: reduce_kquant<BlockQ4K>(W, K, r0, r1, act_buf, n_rec, y, ldy, wt, pair); return true;
        case GGMLType::Q5_K: reduce_kquant<BlockQ5K>(W, K, r0, r1, act_buf, n_rec, y, ldy, wt, pair); return true;
        case GGMLType::Q6_K: reduce_kquant<BlockQ6K>(W, K, r0, r1, act_buf, n_rec, y, ldy, wt, pair); return true;
        case GGMLType::Q4_0: case GGMLType::Q4_1: case GGMLType::Q5_0: case GGMLType::Q5_1: case GGMLType::Q8_0:
            legacy_matmul(wt, W, K, r0, r1, act_buf, n_rec, y, ldy, pair);
            return true;
        default:
            return false;
    }
}

#if LG_AVX_VNNI
const char* simd_name() { return "avx2+avxvnni"; }
#else
const char* simd_name() { return "avx2"; }
#endif

bool quantize_blocks_simd(const float* x, int64_t n_blocks, int ablk, int8_t* qs, float* d) {
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
    for (int64_t b = 0; b < n_blocks; ++b) {
        const float* xb = x + b * ablk;
        __m256 m = _mm256_setzero_ps();
        for (int i = 0; i < ablk; i += 8) m = _mm256_max_ps(m, _mm256_and_ps(_mm256_loadu_ps(xb + i), absmask));
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        const float amax = _mm_cvtss_f32(_mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1)));
        const __m256 id = _mm256_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
        for (int i = 0; i < ablk; i += 8) {
            __m256 v = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(xb + i), id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            __m256i q = _mm256_cvtps_epi32(_mm256_min_ps(hi, _mm256_max_ps(lo, v)));
            __m128i q16 = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
            _mm_storel_epi64(reinterpret_cast<__m128i*>(qs + b * ablk + i), _mm_packs_epi16(q16, q16));
        }
        d[b] = amax / 127.0f;
    }
    return true;
}

}  // namespace lg

#endif

// Internal to the AVX2 K-quant row-lane kernels (avx2_rowlane.cpp; tools/probes/avx2_q4k_floor.cpp times
// them): the row-lane decoded blocks (8 rows, one ymm dword lane each) and the per-block steps. Every
// function is inline: the kernels' loops inline them as when they were local to one file.
#pragma once
#include "quant/x86/avx2.h"

#if LG_SIMD_AVX2

namespace lg::quant::avx2 {


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

}  // namespace lg::quant::avx2

#endif

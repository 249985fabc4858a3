// The attention step (attention.h): scoring kernels, weighted sums of fp16 values, and the two
// pool tasks of a layer. A score's bits depend only on its query and key, and every sum runs in
// position order, so any grouping of queries or split over threads gives the same bits.
#include "attention.h"

#include <cmath>

#include "ops.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace lg {

// Key rows per block of the scoring passes: every query group passes over a block (64 KB of fp32
// keys at head_dim 128) while it is in L2 (docs/perf/2026-12-02-forward-notes.md).
static constexpr int ATT_KBLOCK = 128;


// s[p] = dot(q, k[slot[p]]) * scale for p in [p0, n): the path without AVX-512 (or head_dim not a
// multiple of 16); attn_scores_heads is the AVX-512 one.
static void attn_scores(const float* q, const float* k, const int32_t* slot, int p0, int n, int hd, float scale,
                        float* s) {
    for (int p = p0; p < n; p++) s[p] = dot(q, k + static_cast<size_t>(slot[p]) * hd, hd) * scale;
}

#if defined(__AVX512F__)
// Lane j of the result = sum of the 16 lanes of a[j]. Every a[j] is summed by the same tree
// (lanes l, l+2 in each 128-bit chunk; then l, l+1; then chunks k, k+2; then k, k+1), whatever
// the other 15 hold: a score's bits do not depend on the scores computed beside it.
static inline __m512 reduce16(const __m512* a) {
    __m512 b[8], c[4];
    for (int i = 0; i < 8; i++)
        b[i] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]), _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
    for (int i = 0; i < 4; i++)
        c[i] = _mm512_add_ps(_mm512_shuffle_ps(b[2 * i], b[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(b[2 * i], b[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    const __m512 e0 = _mm512_add_ps(_mm512_shuffle_f32x4(c[0], c[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                    _mm512_shuffle_f32x4(c[0], c[1], _MM_SHUFFLE(3, 2, 3, 2)));
    const __m512 e1 = _mm512_add_ps(_mm512_shuffle_f32x4(c[2], c[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                    _mm512_shuffle_f32x4(c[2], c[3], _MM_SHUFFLE(3, 2, 3, 2)));
    return _mm512_add_ps(_mm512_shuffle_f32x4(e0, e1, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(e0, e1, _MM_SHUFFLE(3, 1, 3, 1)));
}

// Key rows prefetched this many positions ahead of the scoring loop (16 rows = 8 KB of fp32 keys at
// head_dim 128): the hardware prefetcher alone left a long context's key pass latency-bound
// (timings: docs/perf/2026-12-02-forward-notes.md).
constexpr int ATT_PREFETCH = 16;

// s[h][p] = dot(q[h], k[slot[p]]) * scale for HC queries (any tokens and heads of one KV head) and p in
// [p0, n): each key row is loaded once for all HC queries, PB positions per step (HC * PB <= 16
// accumulators, the rest zero), one 16-way reduction. HC = 6 (one token of a 6-query GQA group) and
// 16 exist so that a group's keys are read in one pass: fp32 keys of a long context do not stay in L2.
// Key rows are prefetched ATT_PREFETCH positions ahead, up to pf_end.
template <int HC>
static void attn_scores_heads(const float* const* q, const float* k, const int32_t* slot, int p0, int n, int pf_end,
                              int hd, float scale, float* const* s) {
    constexpr int PB = HC == 6 ? 2 : 16 / HC;
    static_assert(HC * PB <= 16, "one zmm of scores per step");
    const __m512 vscale = _mm512_set1_ps(scale);
    for (int p = p0; p < n; p += PB) {
        const float* kr[PB];
        for (int j = 0; j < PB; j++) kr[j] = k + static_cast<size_t>(slot[p + j < n ? p + j : n - 1]) * hd;
        if (p + ATT_PREFETCH + PB <= pf_end)
            for (int j = 0; j < PB; j++) {
                const char* a = reinterpret_cast<const char*>(k + static_cast<size_t>(slot[p + ATT_PREFETCH + j]) * hd);
                for (int off = 0; off < hd * 4; off += 64) _mm_prefetch(a + off, _MM_HINT_T0);
            }
        __m512 acc[16];
        for (int j = 0; j < 16; j++) acc[j] = _mm512_setzero_ps();
        for (int i = 0; i < hd; i += 16) {
            __m512 kv[PB];
            for (int j = 0; j < PB; j++) kv[j] = _mm512_loadu_ps(kr[j] + i);
            for (int h = 0; h < HC; h++) {
                const __m512 qv = _mm512_load_ps(q[h] + i);
                for (int j = 0; j < PB; j++) acc[h * PB + j] = _mm512_fmadd_ps(qv, kv[j], acc[h * PB + j]);
            }
        }
        alignas(64) float r[16];
        _mm512_store_ps(r, _mm512_mul_ps(reduce16(acc), vscale));
        const int m = n - p < PB ? n - p : PB;
        for (int h = 0; h < HC; h++)
            for (int j = 0; j < m; j++) s[h][p + j] = r[h * PB + j];
    }
}
#endif

// Scores of hc (1, 2, 4, 6, 8 or 16) queries against one KV head's keys over positions [p0, n).
static void attn_scores_group(int hc, const float* const* q, const float* k, const int32_t* slot, int p0, int n,
                              int pf_end, int hd, float scale, float* const* s) {
    if (p0 >= n) return;
#if defined(__AVX512F__)
    if (hd % 16 == 0) {
        if (hc == 16) return attn_scores_heads<16>(q, k, slot, p0, n, pf_end, hd, scale, s);
        if (hc == 8) return attn_scores_heads<8>(q, k, slot, p0, n, pf_end, hd, scale, s);
        if (hc == 6) return attn_scores_heads<6>(q, k, slot, p0, n, pf_end, hd, scale, s);
        if (hc == 4) return attn_scores_heads<4>(q, k, slot, p0, n, pf_end, hd, scale, s);
        if (hc == 2) return attn_scores_heads<2>(q, k, slot, p0, n, pf_end, hd, scale, s);
        return attn_scores_heads<1>(q, k, slot, p0, n, pf_end, hd, scale, s);
    }
#else
    (void)pf_end;
#endif
    for (int h = 0; h < hc; h++) attn_scores(q[h], k, slot, p0, n, hd, scale, s[h]);
}

// o[d] = sum_p (s[p] * inv) * v[slot[p]][d], accumulated over p in order; v is the fp16 cache
// of one (layer, KV head), read in place (values need no rotation).
static void attn_weighted_sum(const float* s, float inv, const uint16_t* v, const int32_t* slot, int n, int hd,
                              float* o) {
    alignas(64) float row[MAX_HEAD_DIM];
    for (int d = 0; d < hd; d++) o[d] = 0.0f;
    for (int p = 0; p < n; p++) {
        const float wgt = s[p] * inv;
        f16_to_f32(v + static_cast<size_t>(slot[p]) * hd, row, hd);
        for (int d = 0; d < hd; d++) o[d] += wgt * row[d];
    }
}

#if defined(__AVX512F__)
// Positions per block of the AVX-512 weighted sums: one block of value rows (128 x 256 bytes at head_dim
// 128) stays in L1/L2 while every query group of the token passes over it. Without blocks, the fp32
// keys read between passes pushed the values out of L2, and each group of 3 queries fetched them again.
constexpr int WS_BLOCK = 128;

// attn_weighted_sum for NQ queries that see the same positions (one token's heads of a KV head), over
// positions [p0, p1) of the sum: each value row is loaded and converted once for all NQ. The sums live
// in o[q * hd ..] between blocks (zero at p0 == 0); per query the same fmas in the same order as one
// pass over 0 .. n, so the same bits.
template <int NV, int NQ>
static void weighted_sums_avx512(const float* const* s, const float* inv, const uint16_t* v, const int32_t* slot,
                                 int p0, int p1, float* o) {
    constexpr int hd = NV * 16;
    __m512 acc[NQ][NV];
    for (int q = 0; q < NQ; q++)
        for (int j = 0; j < NV; j++) acc[q][j] = p0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(o + q * hd + 16 * j);
    for (int p = p0; p < p1; p++) {
        __m512 w[NQ];
        for (int q = 0; q < NQ; q++) w[q] = _mm512_set1_ps(s[q][p] * inv[q]);
        const uint16_t* vp = v + static_cast<size_t>(slot[p]) * hd;
        for (int j = 0; j < NV; j++) {
            const __m512 vv = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(vp + 16 * j)));
            for (int q = 0; q < NQ; q++) acc[q][j] = _mm512_fmadd_ps(w[q], vv, acc[q][j]);
        }
    }
    for (int q = 0; q < NQ; q++)
        for (int j = 0; j < NV; j++) _mm512_storeu_ps(o + q * hd + 16 * j, acc[q][j]);
}

template <int NV>
static void weighted_sums_block(const float* const* s, const float* inv, int nq, const uint16_t* v,
                                const int32_t* slot, int p0, int p1, float* o) {
    constexpr int hd = NV * 16;
    int q = 0;
    for (; q + 3 <= nq; q += 3) weighted_sums_avx512<NV, 3>(s + q, inv + q, v, slot, p0, p1, o + q * hd);
    for (; q + 2 <= nq; q += 2) weighted_sums_avx512<NV, 2>(s + q, inv + q, v, slot, p0, p1, o + q * hd);
    for (; q < nq; q++) weighted_sums_avx512<NV, 1>(s + q, inv + q, v, slot, p0, p1, o + q * hd);
}
#endif

// attn_weighted_sum for nq queries over the same n positions, outputs at o + q * hd. With AVX-512 (head_dim
// 64 or 128) up to 3 queries share each pass over a block of value rows, and all of them pass over the
// block while it is in cache.
static void attn_weighted_sums(const float* const* s, const float* inv, int nq, const uint16_t* v, const int32_t* slot,
                               int n, int hd, float* o) {
#if defined(__AVX512F__)
    if (hd == 64 || hd == 128) {
        for (int p0 = 0; p0 < n; p0 += WS_BLOCK) {
            const int p1 = n - p0 < WS_BLOCK ? n : p0 + WS_BLOCK;
            if (hd == 128) weighted_sums_block<8>(s, inv, nq, v, slot, p0, p1, o);
            else weighted_sums_block<4>(s, inv, nq, v, slot, p0, p1, o);
        }
        return;
    }
#endif
    for (int q = 0; q < nq; q++) attn_weighted_sum(s[q], inv[q], v, slot, n, hd, o + q * hd);
}


// ---------------------------------------------------------------------------- the layer's steps

void kv_store(const Config& c, const float* bk, KVCache& cache, int l, ThreadPool& pool, RunState& rs,
              const ChunkPlan& plan) {
    const int T = plan.T, KV = c.kv_dim(), hd = c.head_dim;
    const bool neox = c.rope_style == RopeStyle::Neox;
    auto task = [&](int, int ci, int nc) {
        int64_t b, e;
        split_range(static_cast<int64_t>(c.n_head_kv) * T, ci, nc, 1, &b, &e);
        alignas(64) float kb[MAX_HEAD_DIM];
        for (int64_t i = b; i < e; i++) {
            const int h = static_cast<int>(i / T), t = static_cast<int>(i % T);
            const int slot = rs.chunk_slot[t];
            const float* kn = rs.k.data() + t * KV + h * hd;
            if (bk) {
                for (int d = 0; d < hd; d++) kb[d] = kn[d] + bk[h * hd + d];
                kn = kb;
            }
            rope(cache.k(l, h) + static_cast<size_t>(slot) * hd, kn, rs.rot_cos.data() + t * hd / 2,
                 rs.rot_sin.data() + t * hd / 2, hd, neox);
            f32_to_f16(rs.v.data() + t * KV + h * hd, cache.v(l, h) + static_cast<size_t>(slot) * hd, hd);
        }
    };
    pool.run(pool_chunks(pool, static_cast<int64_t>(c.n_head_kv) * T, 1, CHUNKS_PER_THREAD), task);
}

namespace {

// What every work item of one layer's attention reads.
struct AttnLayer {
    const Config& c;
    KVCache& cache;
    int l;
    RunState& rs;
    const ChunkPlan& plan;
    float scale;  // 1 / sqrt(head_dim)
};

// The queries of a work item, per query j = (token t0 + j / group, head kvh * group + j % group).
struct ItemQueries {
    const float* ring[ATT_TOKENS * MAX_GROUP];  // rotated by its rotation index: for ring and scratch keys
    const float* sink[ATT_TOKENS * MAX_GROUP];  // rotated by its cache position: for sink keys
    float* scores[ATT_TOKENS * MAX_GROUP];      // [capacity] each
    float inv[ATT_TOKENS * MAX_GROUP];          // 1 / softmax sum
};

// Rotate the nq queries of tokens t0.. of KV head kvh into thread tid's buffers. Sink keys sit at
// rotation index = position, so a query is rotated a second time, by its position, for them only.
void rotate_queries(const AttnLayer& a, int tid, int t0, int nq, int kvh, ItemQueries& iq) {
    const RunState& rs = a.rs;
    const int E = a.c.n_embd, hd = a.c.head_dim, group = a.c.n_head / a.c.n_head_kv, nq_max = rs.att_queries;
    const bool neox = a.c.rope_style == RopeStyle::Neox;
    float* sbuf = rs.scores.data() + static_cast<size_t>(tid) * nq_max * rs.capacity;
    float* qring = rs.qbuf.data() + static_cast<size_t>(tid) * 2 * nq_max * hd;
    float* qsink = qring + static_cast<size_t>(nq_max) * hd;
    for (int j = 0; j < nq; j++) {
        const int t = t0 + j / group, h = kvh * group + j % group, pos = a.plan.pos0 + t;
        const float* qt = rs.q.data() + t * E + h * hd;
        float* qr = qring + static_cast<size_t>(j) * hd;
        float* qs = qsink + static_cast<size_t>(j) * hd;
        rope(qr, qt, rs.rot_cos.data() + t * hd / 2, rs.rot_sin.data() + t * hd / 2, hd, neox);
        if (a.plan.n_sink_pos > 0)  // (without sink keys qs is never read)
            rope(qs, qt, rs.rope_cos.data() + pos * hd / 2, rs.rope_sin.data() + pos * hd / 2, hd, neox);
        iq.ring[j] = qr;
        iq.sink[j] = qs;
        iq.scores[j] = sbuf + static_cast<size_t>(j) * rs.capacity;
    }
}

// Scores of queries j0 .. j1 over positions [p0, p1), in blocks of ATT_KBLOCK key rows that every
// query group passes over while they are in L2; up to 16 queries per pass.
void score(const AttnLayer& a, const float* kc, const float* const* qv, float* const* sp, int j0, int j1, int p0,
           int p1) {
    for (int pb = p0; pb < p1; pb += ATT_KBLOCK) {
        const int pe = p1 - pb < ATT_KBLOCK ? p1 : pb + ATT_KBLOCK;
        for (int j = j0; j < j1;) {
            const int left = j1 - j;
            const int hc = left >= 16 ? 16 : left >= 8 ? 8 : left >= 6 ? 6 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
            attn_scores_group(hc, qv + j, kc, a.rs.pos_slot.data(), pb, pe, p1, a.c.head_dim, a.scale, sp + j);
            j += hc;
        }
    }
}

// One work item: tokens [t0, t1) of the chunk, KV head kvh. Its queries share each pass over the keys
// they all see; each token then scores its few newer positions.
void attend_item(const AttnLayer& a, int tid, int t0, int t1, int kvh) {
    const ChunkPlan& plan = a.plan;
    const int hd = a.c.head_dim, group = a.c.n_head / a.c.n_head_kv, nq = (t1 - t0) * group;
    const float* kc = a.cache.k(a.l, kvh);
    ItemQueries iq;
    rotate_queries(a, tid, t0, nq, kvh, iq);
    // Positions every token of the item sees: 0 .. pos0 + t0.
    const int n_common = plan.pos0 + t0 + 1;
    const int n_sink = plan.n_sink_pos;
    score(a, kc, iq.sink, iq.scores, 0, nq, 0, n_sink < n_common ? n_sink : n_common);
    score(a, kc, iq.ring, iq.scores, 0, nq, n_sink < n_common ? n_sink : n_common, n_common);
    // Then each token's own newer positions (its predecessors inside the item, and itself).
    for (int t = t0 + 1; t < t1; t++) {
        const int j0 = (t - t0) * group, n = plan.pos0 + t + 1;
        const int ps = n_sink > n_common ? (n_sink < n ? n_sink : n) : n_common;
        score(a, kc, iq.sink, iq.scores, j0, j0 + group, n_common, ps);
        score(a, kc, iq.ring, iq.scores, j0, j0 + group, ps, n);
    }
    for (int j = 0; j < nq; j++) iq.inv[j] = softmax_exp(iq.scores[j], plan.pos0 + t0 + j / group + 1);
    for (int t = t0; t < t1; t++)  // a token's heads of this KV head: adjacent outputs, same positions
        attn_weighted_sums(iq.scores + (t - t0) * group, iq.inv + (t - t0) * group, group, a.cache.v(a.l, kvh),
                           a.rs.pos_slot.data(), plan.pos0 + t + 1, hd,
                           a.rs.att.data() + t * a.c.n_embd + kvh * group * hd);
}

}  // namespace

void attention(const Config& c, KVCache& cache, int l, ThreadPool& pool, RunState& rs, const ChunkPlan& plan) {
    const AttnLayer a{c, cache, l, rs, plan, 1.0f / std::sqrt(static_cast<float>(c.head_dim))};
    const int T = plan.T, n_tblk = (T + ATT_TOKENS - 1) / ATT_TOKENS;
    auto task = [&](int tid, int ci, int nc) {
        int64_t b, e;
        split_range(static_cast<int64_t>(n_tblk) * c.n_head_kv, ci, nc, 1, &b, &e);
        for (int64_t i = b; i < e; i++) {
            const int blk = static_cast<int>(i / c.n_head_kv), kvh = static_cast<int>(i % c.n_head_kv);
            const int t0 = blk * ATT_TOKENS, t1 = t0 + ATT_TOKENS < T ? t0 + ATT_TOKENS : T;
            attend_item(a, tid, t0, t1, kvh);
        }
    };
    pool.run(pool_chunks(pool, static_cast<int64_t>(n_tblk) * c.n_head_kv, 1, CHUNKS_PER_THREAD), task);
}

}  // namespace lg

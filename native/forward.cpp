// The forward pass: embeddings -> layers (rmsnorm, qkv, RoPE at attention time, GQA attention over
// sink+ring+scratch, o, SwiGLU) -> logits. Knows nothing about policies or chunking (kv_cache, engine).
// Batch invariance: work is split by OUTPUT ROWS / (token, head) pairs, computed alike for every T.
#include "forward.h"

#include <cassert>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "quant.h"

#if defined(__F16C__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace lg {

// ---------------------------------------------------------------------------- fp16

#if defined(__F16C__)
void f32_to_f16(const float* src, uint16_t* dst, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) dst[i] = _cvtss_sh(src[i], _MM_FROUND_TO_NEAREST_INT);
}
void f16_to_f32(const uint16_t* src, float* dst, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
    for (; i < n; i++) dst[i] = _cvtsh_ss(src[i]);
}
#else
static uint16_t f2h(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0));
    if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
    if (ax < 0x38800000u) {  // subnormal half (or zero)
        float a;
        std::memcpy(&a, &ax, 4);
        uint32_t m = static_cast<uint32_t>(std::nearbyint(a * 16777216.0f));  // a / 2^-24
        return static_cast<uint16_t>(sign | m);
    }
    uint32_t mant = ax & 0x7fffffu, exp = (ax >> 23) - 112;
    uint32_t h = (exp << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
    return static_cast<uint16_t>(sign | h);
}
static float h2f(uint16_t h) {
    uint32_t sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
    if (e == 0) {
        float f = std::ldexp(static_cast<float>(m), -24);
        return sign ? -f : f;
    }
    x = e == 31 ? sign | 0x7f800000u | (m << 13) : sign | ((e + 112) << 23) | (m << 13);
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}
void f32_to_f16(const float* src, uint16_t* dst, int n) { for (int i = 0; i < n; i++) dst[i] = f2h(src[i]); }
void f16_to_f32(const uint16_t* src, float* dst, int n) { for (int i = 0; i < n; i++) dst[i] = h2f(src[i]); }
#endif

// ---------------------------------------------------------------------------- small math

// 16 independent lanes then a fixed tree: vectorizes without -ffast-math, and the order
// depends only on n.
static constexpr int LANES = 16;
static constexpr int ATT_KBLOCK = 128;  // key rows per block of the scoring passes (see att_task)

static inline float reduce_lanes(float* a) {
    for (int w = LANES / 2; w > 0; w /= 2)
        for (int j = 0; j < w; j++) a[j] += a[j + w];
    return a[0];
}

static inline float dot(const float* a, const float* b, int n) {
    float acc[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) acc[j] += a[i + j] * b[i + j];
    for (; i < n; i++) acc[i % LANES] += a[i] * b[i];
    return reduce_lanes(acc);
}

// exp for x <= 88: 2^n * p(r), |r| <= ln2/2, degree-6 polynomial (rel. error ~2e-7). Branchless
// so loops over it vectorize; one definition so every caller rounds the same way.
static inline float exp_approx(float x) {
    x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
    float n = std::floor(x * 1.44269504088896341f + 0.5f);
    float r = x - n * 0.693145751953125f - n * 1.42860682030941723212e-6f;
    float p = 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
    float scale;
    std::memcpy(&scale, &bits, 4);
    return p * scale;
}

// In blocks of 16 with a fixed trip count, so the compiler vectorizes exp_approx (the plain loops
// stayed scalar); the tail goes one by one. Which path an element takes depends only on its index
// and n, never on the chunk's token count, so batched and one-token forwards give the same bits.
static void exp_inplace(float* __restrict s, int n) {
    int p = 0;
    for (; p + 16 <= n; p += 16)
        for (int j = 0; j < 16; j++) s[p + j] = exp_approx(s[p + j]);
    for (; p < n; p++) s[p] = exp_approx(s[p]);
}

// g = silu(g) * u over n values.
static void silu_mul(float* __restrict g, const float* __restrict u, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) g[i + j] = g[i + j] / (1.0f + exp_approx(-g[i + j])) * u[i + j];
    for (; i < n; i++) g[i] = g[i] / (1.0f + exp_approx(-g[i])) * u[i];
}

static void rmsnorm(float* out, const float* x, const float* w, int n, float eps) {
    float acc[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) acc[j] += x[i + j] * x[i + j];
    for (; i < n; i++) acc[i % LANES] += x[i] * x[i];
    float inv = 1.0f / std::sqrt(reduce_lanes(acc) / n + eps);
    for (i = 0; i < n; i++) out[i] = x[i] * inv * w[i];
}

// Rotate one head vector to position p: out = R(p) in (in == out allowed).
static inline void rope(float* out, const float* in, const float* c, const float* s, int hd,
                        RopeStyle style) {
    const int half = hd / 2;
    if (style == RopeStyle::Neox) {
        for (int i = 0; i < half; i++) {
            float a = in[i], b = in[i + half];
            out[i] = a * c[i] - b * s[i];
            out[i + half] = a * s[i] + b * c[i];
        }
    } else {
        for (int i = 0; i < half; i++) {
            float a = in[2 * i], b = in[2 * i + 1];
            out[2 * i] = a * c[i] - b * s[i];
            out[2 * i + 1] = a * s[i] + b * c[i];
        }
    }
}

void rope_frequencies(double base, int hd, double* theta) {
    for (int i = 0; i < hd / 2; i++) theta[i] = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(hd));
}

void fill_rope_row(const double* theta, int hd, int64_t rot, float* c, float* s) {
    for (int i = 0; i < hd / 2; i++) {
        const double ang = static_cast<double>(rot) * theta[i];
        c[i] = static_cast<float>(std::cos(ang));
        s[i] = static_cast<float>(std::sin(ang));
    }
}

// ---------------------------------------------------------------------------- attention kernels

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
// head_dim 128). The hardware prefetcher alone left a long context's key pass latency-bound. Measured
// (1.5B, one-token forward after 3000 stream tokens, 2 threads, in one process alternating per forward,
// medians of 40): 25.63 ms without, 22.72 at 8, 22.28 at 16, 22.42 at 32; 4 tokens 40.98 / 40.42 at 16.
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

// ---------------------------------------------------------------------------- run state

RunState::RunState(const Config& c, const Weights& w, int capacity_, int max_chunk_, int n_threads, ActPrecision prec_)
    : max_chunk(max_chunk_), capacity(capacity_), prec(prec_) {
    const size_t T = max_chunk, E = c.n_embd, KV = c.kv_dim(), F = c.n_ff, hd = c.head_dim;
    x = Buffer<float>(T * E);
    xb = Buffer<float>(T * E);
    q = Buffer<float>(T * E);
    k = Buffer<float>(T * KV);
    v = Buffer<float>(T * KV);
    att = Buffer<float>(T * E);
    hb = Buffer<float>(T * F);
    hb2 = Buffer<float>(T * F);
    act_bytes = 0;
    auto need = [&](const Matrix& m) {
        size_t b = act_buffer_bytes(m.type, m.cols, max_chunk, prec);
        if (b > act_bytes) act_bytes = b;
    };
    need(w.output);
    for (const LayerWeights& L : w.layers) {
        need(L.wq); need(L.wk); need(L.wv); need(L.wo); need(L.w_gate); need(L.w_up); need(L.w_down);
    }
    for (auto& a : act) a = Buffer<uint8_t>(act_bytes);
    if (c.n_head / c.n_head_kv > MAX_GROUP)
        throw std::invalid_argument("attention: " + std::to_string(c.n_head / c.n_head_kv) +
                                    " query heads per KV head; at most " + std::to_string(MAX_GROUP) + " supported");
    att_queries = ATT_TOKENS * (c.n_head / c.n_head_kv);
    scores = Buffer<float>(static_cast<size_t>(n_threads) * att_queries * capacity);
    qbuf = Buffer<float>(static_cast<size_t>(n_threads) * 2 * att_queries * hd);
    theta = Buffer<double>(hd / 2);
    rope_frequencies(c.rope_theta, static_cast<int>(hd), theta.data());
    rope_cos = Buffer<float>(static_cast<size_t>(capacity) * hd / 2);
    rope_sin = Buffer<float>(static_cast<size_t>(capacity) * hd / 2);
    rot_cos = Buffer<float>(T * hd / 2);
    rot_sin = Buffer<float>(T * hd / 2);
    for (int p = 0; p < capacity; p++) fill_rope_row(theta.data(), static_cast<int>(hd), p, &rope_cos[p * hd / 2], &rope_sin[p * hd / 2]);
    pos_slot = Buffer<int32_t>(capacity);
    chunk_slot = Buffer<int32_t>(max_chunk);
    // Touch everything now so RSS is fixed from init on.
    for (Buffer<float>* b : {&x, &xb, &q, &k, &v, &att, &hb, &hb2, &scores, &qbuf, &rot_cos, &rot_sin})
        std::memset(b->data(), 0, b->size() * sizeof(float));
    for (auto& a : act) std::memset(a.data(), 0, act_bytes);
}

size_t RunState::bytes() const {
    size_t f = x.size() + xb.size() + q.size() + k.size() + v.size() + att.size() + hb.size() +
               hb2.size() + scores.size() + qbuf.size() + rope_cos.size() + rope_sin.size() + rot_cos.size() + rot_sin.size();
    return f * sizeof(float) + theta.size() * sizeof(double) + 3 * act_bytes +
           (pos_slot.size() + chunk_slot.size()) * sizeof(int32_t);
}

// ---------------------------------------------------------------------------- forward

// Row splits are rounded to this many rows (kernels like whole row groups; any split is exact).
static constexpr int64_t ROW_ALIGN = 16;
static constexpr int CHUNKS_PER_THREAD = 4;
// Measured on the 2-core dev box, 1.5B: 1 instead of 4 made prefill-512 2-5% faster (125-130 vs
// 115-127 tok/s, alternating runs) and 6-13 token verification 3-4% faster; decode unchanged.
// On a 2-vCPU Zen 3 box (no AVX-512), the 1.5B one-token forward, two engines alternating in one process,
// 40 rounds, two runs: 4 instead of 1 took 0.981 and 1.010 of the time (noise). With 4, the main thread's
// wait for the worker fell from 6-8 ms to 2-3 ms a token (rdtsc around the pool's wait), but its own work
// grew by as much: the two cores share one memory bandwidth (the output matrix read at 23.4 GB/s; the
// bench measures 24 GB/s).
static constexpr int MATMUL_CHUNKS_PER_THREAD = 1;
static constexpr int PREP_PARALLEL_MIN = 4;  // vectors from which activation preparation is split over threads

void forward_chunk(const Model& model, KVCache& cache, ThreadPool& pool, RunState& rs,
                   const ChunkPlan& plan, const int32_t* tokens, const ChunkOutputs& out) {
    const Config& c = model.config();
    const Weights& w = model.weights();
    const int T = plan.T, E = c.n_embd, KV = c.kv_dim(), F = c.n_ff, hd = c.head_dim;
    const int n_head = c.n_head, n_head_kv = c.n_head_kv, group = n_head / n_head_kv;
    const int cap = rs.capacity;
    assert(T >= 1 && T <= rs.max_chunk && plan.n_pos <= cap && hd <= MAX_HEAD_DIM);
    float* x = rs.x.data();
    float* xb = rs.xb.data();
    // Chunks per task: a few per thread for uneven work (attention: later tokens see more keys), so a
    // thread the OS runs late just gets fewer; one per thread for matmuls (row ranges, align = ROW_ALIGN),
    // whose kernels transpose the activations once per call.
    auto n_chunks = [&](int64_t units, int64_t align) {
        const int per_thread = align == ROW_ALIGN ? MATMUL_CHUNKS_PER_THREAD : CHUNKS_PER_THREAD;
        int64_t n = (units + align - 1) / align, cap = static_cast<int64_t>(pool.size()) * per_thread;
        return static_cast<int>(n < cap ? n : cap);
    };

    // Activation preparation (quantization) for n vectors of K, split over the pool by vector when
    // there are enough of them to pay for the hand-off; records do not depend on the split.
    auto prep = [&](GGMLType type, const float* src, int64_t K, int n, uint8_t* buf) {
        if (n < PREP_PARALLEL_MIN || pool.size() == 1) return prepare_acts(type, src, K, n, buf, rs.prec);
        auto task = [&](int, int ci, int nc) {
            int64_t b, e;
            split_range(n, ci, nc, 1, &b, &e);
            if (b < e) prepare_acts_range(type, src, K, n, static_cast<int>(b), static_cast<int>(e), buf, rs.prec);
        };
        pool.run(n_chunks(n, 1), task);
    };

    auto save_hidden = [&](int layer) {
        if (!out.hidden) return;
        float* dst = out.hidden + (static_cast<size_t>(layer) * out.hidden_T + out.hidden_t0) * E;
        std::memcpy(dst, x, sizeof(float) * T * E);
    };

    for (int t = 0; t < T; t++)
        fill_rope_row(rs.theta.data(), hd, plan.rot0 + t, rs.rot_cos.data() + t * hd / 2, rs.rot_sin.data() + t * hd / 2);

    for (int t = 0; t < T; t++) {
        const Matrix& emb = w.token_embd;
        dequantize_row(emb.type, emb.data + static_cast<int64_t>(tokens[t]) * emb.row_bytes, x + t * E, E);
    }
    save_hidden(0);

    for (int l = 0; l < c.n_layer; l++) {
        const LayerWeights& L = w.layers[l];

        // ---- attention block: xb = rmsnorm(x); q, k, v = xb @ W^T (+ b)
        for (int t = 0; t < T; t++) rmsnorm(xb + t * E, x + t * E, L.attn_norm, E, c.rms_eps);
        const Matrix* qkv[3] = {&L.wq, &L.wk, &L.wv};
        float* qkv_out[3] = {rs.q.data(), rs.k.data(), rs.v.data()};
        // The key bias is added when the key is written to the cache (kv_task, in fp32, before its
        // rotation); the biased q and v come out of the matmul here.
        const float* qkv_bias[3] = {L.bq, nullptr, L.bv};
        int act_of[3];
        for (int m = 0; m < 3; m++) {
            act_of[m] = m;
            for (int j = 0; j < m; j++)
                if (qkv[j]->type == qkv[m]->type) { act_of[m] = act_of[j]; break; }
            if (act_of[m] == m) prep(qkv[m]->type, xb, E, T, rs.act[m].data());
        }
        auto qkv_task = [&](int, int ci, int nc) {
            int64_t b, e;
            split_range(E + 2 * KV, ci, nc, ROW_ALIGN, &b, &e);
            int64_t off = 0;
            for (int m = 0; m < 3; m++) {
                const Matrix& W = *qkv[m];
                int64_t r0 = b - off < 0 ? 0 : b - off, r1 = e - off > W.rows ? W.rows : e - off;
                off += W.rows;
                if (r0 >= r1) continue;
                matmul(W.type, W.data, E, r0, r1, rs.act[act_of[m]].data(), xb, T, qkv_out[m], W.rows);
                if (qkv_bias[m])
                    for (int t = 0; t < T; t++)
                        for (int64_t r = r0; r < r1; r++) qkv_out[m][t * W.rows + r] += qkv_bias[m][r];
            }
        };
        pool.run(n_chunks(E + 2 * KV, ROW_ALIGN), qkv_task);

        // ---- write this chunk's keys (+ bias, rotated by their rotation index, fp32) and values (fp16)
        // into their slots; earlier keys are never touched again (kv_cache.h). Work item = (kv head, token).
        auto kv_task = [&](int, int ci, int nc) {
            int64_t b, e;
            split_range(static_cast<int64_t>(n_head_kv) * T, ci, nc, 1, &b, &e);
            alignas(64) float kb[MAX_HEAD_DIM];
            for (int64_t i = b; i < e; i++) {
                const int h = static_cast<int>(i / T), t = static_cast<int>(i % T);
                const int slot = rs.chunk_slot[t];
                const float* kn = rs.k.data() + t * KV + h * hd;
                if (L.bk) {
                    for (int d = 0; d < hd; d++) kb[d] = kn[d] + L.bk[h * hd + d];
                    kn = kb;
                }
                rope(cache.k(l, h) + static_cast<size_t>(slot) * hd, kn, rs.rot_cos.data() + t * hd / 2,
                     rs.rot_sin.data() + t * hd / 2, hd, c.rope_style);
                f32_to_f16(rs.v.data() + t * KV + h * hd, cache.v(l, h) + static_cast<size_t>(slot) * hd, hd);
            }
        };
        pool.run(n_chunks(static_cast<int64_t>(n_head_kv) * T, 1), kv_task);

        // ---- attention: softmax(q.k / sqrt(hd)) @ v over positions 0..pos, per query (token, head). A work
        // item is (up to ATT_TOKENS tokens, KV head): its tokens' queries of that KV head's group share each
        // pass over the keys they all see, up to 16 per pass; each token then scores its few newer positions.
        // A score's bits depend only on its query and key (attn_scores_heads), so any grouping gives the same.
        const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
        const int n_tblk = (T + ATT_TOKENS - 1) / ATT_TOKENS;
        auto att_task = [&](int tid, int ci, int nc) {
            int64_t b, e;
            split_range(static_cast<int64_t>(n_tblk) * n_head_kv, ci, nc, 1, &b, &e);
            const int nq_max = rs.att_queries;
            float* sbuf = rs.scores.data() + static_cast<size_t>(tid) * nq_max * cap;
            float* qring = rs.qbuf.data() + static_cast<size_t>(tid) * 2 * nq_max * hd;
            float* qsink = qring + static_cast<size_t>(nq_max) * hd;
            const int32_t* slot = rs.pos_slot.data();
            for (int64_t i = b; i < e; i++) {
                const int blk = static_cast<int>(i / n_head_kv), kvh = static_cast<int>(i % n_head_kv);
                const int t0 = blk * ATT_TOKENS, t1 = t0 + ATT_TOKENS < T ? t0 + ATT_TOKENS : T;
                const int nq = (t1 - t0) * group;
                const float* kc = cache.k(l, kvh);
                const float* qrp[ATT_TOKENS * MAX_GROUP];
                const float* qsp[ATT_TOKENS * MAX_GROUP];
                float* sp[ATT_TOKENS * MAX_GROUP];
                // Query j = (token t0 + j / group, head kvh * group + j % group). Ring and scratch keys: the
                // query at its rotation index. Sink keys sit at rotation index = position: the query at its
                // cache position.
                for (int j = 0; j < nq; j++) {
                    const int t = t0 + j / group, h = kvh * group + j % group, pos = plan.pos0 + t;
                    const float* qt = rs.q.data() + t * E + h * hd;
                    float* qr = qring + static_cast<size_t>(j) * hd;
                    float* qs = qsink + static_cast<size_t>(j) * hd;
                    rope(qr, qt, rs.rot_cos.data() + t * hd / 2, rs.rot_sin.data() + t * hd / 2, hd, c.rope_style);
                    if (plan.n_sink_pos > 0)  // (without sink keys qs is never read)
                        rope(qs, qt, rs.rope_cos.data() + pos * hd / 2, rs.rope_sin.data() + pos * hd / 2, hd,
                             c.rope_style);
                    qrp[j] = qr;
                    qsp[j] = qs;
                    sp[j] = sbuf + static_cast<size_t>(j) * cap;
                }
                // Positions in blocks of ATT_KBLOCK key rows (64 KB at head_dim 128), every query group
                // passing over a block while it is in L2: more than 16 queries (2-4 tokens) take several
                // passes. Measured as ATT_PREFETCH: 2 tokens 32.40 ms unblocked, 31.88 at 128 rows; 4 and
                // 8 tokens within noise.
                auto score = [&](const float* const* qv, int j0, int j1, int p0, int p1) {
                    for (int pb = p0; pb < p1; pb += ATT_KBLOCK) {
                        const int pe = p1 - pb < ATT_KBLOCK ? p1 : pb + ATT_KBLOCK;
                        for (int j = j0; j < j1;) {
                            const int left = j1 - j;
                            const int hc = left >= 16 ? 16 : left >= 8 ? 8 : left >= 6 ? 6 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
                            attn_scores_group(hc, qv + j, kc, slot, pb, pe, p1, hd, scale, sp + j);
                            j += hc;
                        }
                    }
                };
                // Positions every token of the item sees: 0 .. pos0 + t0.
                const int n_common = plan.pos0 + t0 + 1;
                const int n_sink = plan.n_sink_pos;
                score(qsp, 0, nq, 0, n_sink < n_common ? n_sink : n_common);
                score(qrp, 0, nq, n_sink < n_common ? n_sink : n_common, n_common);
                // Then each token's own newer positions (its predecessors inside the item, and itself).
                for (int t = t0 + 1; t < t1; t++) {
                    const int j0 = (t - t0) * group, n = plan.pos0 + t + 1;
                    const int ps = n_sink > n_common ? (n_sink < n ? n_sink : n) : n_common;
                    score(qsp, j0, j0 + group, n_common, ps);
                    score(qrp, j0, j0 + group, ps, n);
                }
                float inv[ATT_TOKENS * MAX_GROUP];
                for (int j = 0; j < nq; j++) {
                    const int t = t0 + j / group, n = plan.pos0 + t + 1;
                    float* s = sp[j];
                    float mx[LANES], sm[LANES];
                    for (int u = 0; u < LANES; u++) mx[u] = -INFINITY;
                    int p = 0;
                    for (; p + LANES <= n; p += LANES)
                        for (int u = 0; u < LANES; u++) mx[u] = s[p + u] > mx[u] ? s[p + u] : mx[u];
                    for (; p < n; p++) mx[p % LANES] = s[p] > mx[p % LANES] ? s[p] : mx[p % LANES];
                    float m = mx[0];
                    for (int u = 1; u < LANES; u++) m = mx[u] > m ? mx[u] : m;
                    for (p = 0; p < n; p++) s[p] -= m;
                    exp_inplace(s, n);
                    for (int u = 0; u < LANES; u++) sm[u] = 0.0f;
                    for (p = 0; p + LANES <= n; p += LANES)
                        for (int u = 0; u < LANES; u++) sm[u] += s[p + u];
                    for (; p < n; p++) sm[p % LANES] += s[p];
                    inv[j] = 1.0f / reduce_lanes(sm);
                }
                for (int t = t0; t < t1; t++)  // a token's heads of this KV head: adjacent outputs, same positions
                    attn_weighted_sums(sp + (t - t0) * group, inv + (t - t0) * group, group, cache.v(l, kvh), slot,
                                       plan.pos0 + t + 1, hd, rs.att.data() + t * E + kvh * group * hd);
            }
        };
        pool.run(n_chunks(static_cast<int64_t>(n_tblk) * n_head_kv, 1), att_task);

        // ---- x += att @ Wo^T
        prep(L.wo.type, rs.att.data(), E, T, rs.act[0].data());
        auto o_task = [&](int, int ci, int nc) {
            int64_t r0, r1;
            split_range(E, ci, nc, ROW_ALIGN, &r0, &r1);
            if (r0 >= r1) return;
            matmul(L.wo.type, L.wo.data, E, r0, r1, rs.act[0].data(), rs.att.data(), T, xb, E);
            for (int t = 0; t < T; t++)
                for (int64_t r = r0; r < r1; r++) x[t * E + r] += xb[t * E + r];
        };
        pool.run(n_chunks(E, ROW_ALIGN), o_task);

        // ---- FFN: x += (silu(xb @ Wg^T) * (xb @ Wu^T)) @ Wd^T, xb = rmsnorm(x)
        for (int t = 0; t < T; t++) rmsnorm(xb + t * E, x + t * E, L.ffn_norm, E, c.rms_eps);
        prep(L.w_gate.type, xb, E, T, rs.act[0].data());
        const bool same_gu = L.w_up.type == L.w_gate.type;
        if (!same_gu) prep(L.w_up.type, xb, E, T, rs.act[1].data());
        auto gu_task = [&](int, int ci, int nc) {
            int64_t r0, r1;
            split_range(F, ci, nc, ROW_ALIGN, &r0, &r1);
            if (r0 >= r1) return;
            float* g = rs.hb.data();
            float* u = rs.hb2.data();
            matmul(L.w_gate.type, L.w_gate.data, E, r0, r1, rs.act[0].data(), xb, T, g, F);
            matmul(L.w_up.type, L.w_up.data, E, r0, r1, rs.act[same_gu ? 0 : 1].data(), xb, T, u, F);
            for (int t = 0; t < T; t++) silu_mul(g + t * F + r0, u + t * F + r0, r1 - r0);
        };
        pool.run(n_chunks(F, ROW_ALIGN), gu_task);

        prep(L.w_down.type, rs.hb.data(), F, T, rs.act[0].data());
        auto down_task = [&](int, int ci, int nc) {
            int64_t r0, r1;
            split_range(E, ci, nc, ROW_ALIGN, &r0, &r1);
            if (r0 >= r1) return;
            matmul(L.w_down.type, L.w_down.data, F, r0, r1, rs.act[0].data(), rs.hb.data(), T, xb, E);
            for (int t = 0; t < T; t++)
                for (int64_t r = r0; r < r1; r++) x[t * E + r] += xb[t * E + r];
        };
        pool.run(n_chunks(E, ROW_ALIGN), down_task);
        save_hidden(l + 1);
    }

    if (!out.logits) return;
    // ---- logits = rmsnorm(x) @ Wout^T for the last token or all T
    const int n_out = out.all_logits ? T : 1;
    const int t_first = T - n_out;
    for (int t = 0; t < n_out; t++) rmsnorm(xb + t * E, x + (t_first + t) * E, w.output_norm, E, c.rms_eps);
    prep(w.output.type, xb, E, n_out, rs.act[0].data());
    auto out_task = [&](int, int ci, int nc) {
        int64_t r0, r1;
        split_range(c.n_vocab, ci, nc, ROW_ALIGN, &r0, &r1);
        if (r0 < r1)
            matmul(w.output.type, w.output.data, E, r0, r1, rs.act[0].data(), xb, n_out, out.logits, c.n_vocab);
    };
    pool.run(n_chunks(c.n_vocab, ROW_ALIGN), out_task);
}

}  // namespace lg

// The forward pass of one planned chunk, in llama2.c's shape: embed; per layer rmsnorm, q/k/v,
// attention (attention.cpp), o-projection into the residual, rmsnorm, gate/up with SwiGLU, down
// projection into the residual; final norm; logits. Knows nothing about policies or chunking.
// Batch invariance: work is split by OUTPUT ROWS / (token, head) pairs, computed alike for every T.
#include "forward.h"

#include <cassert>
#include <cstring>
#include <stdexcept>
#include <string>

#include "attention.h"
#include "ops.h"
#include "quant.h"

namespace lg {

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

// ---------------------------------------------------------------------------- matmuls

// Row splits are rounded to this many rows (kernels like whole row groups; any split is exact).
static constexpr int64_t ROW_ALIGN = 16;  // a multiple of PACK_ROWS: row splits never cut a packed group
static_assert(ROW_ALIGN % PACK_ROWS == 0, "row splits must keep packed groups whole");

// y rows [r0, r1) of W times the prepared activations, through the kernels of W's layout.
static void mm(const Matrix& W, int64_t K, int64_t r0, int64_t r1, const uint8_t* act, const float* x, int T, float* y,
               int64_t ldy) {
    if (W.packed) matmul_packed(W.type, W.data, K, r0, r1, act, x, T, y, ldy);
    else matmul(W.type, W.data, K, r0, r1, act, x, T, y, ldy);
}
// One pool chunk per thread for matmuls (row ranges): their kernels transpose the activations once
// per call (docs/perf/2026-12-02-forward-notes.md).
static constexpr int MATMUL_CHUNKS_PER_THREAD = 1;
static constexpr int PREP_PARALLEL_MIN = 4;  // vectors from which activation preparation is split over threads

namespace {

// What a matmul step does with its product P = in @ W^T ([T][W.rows]).
enum class Epi {
    Store,   // y = P
    Add,     // y += P (the residual; P passes through rs.xb)
    SwiGLU,  // y = silu(P) * (in @ up^T) (up's product in rs.hb2)
};

// The pool and buffers every step of one chunk's forward shares.
struct Pass {
    ThreadPool& pool;
    RunState& rs;

    // Activation preparation (quantization) of n vectors of K, split over the pool by vector when
    // there are enough of them to pay for the hand-off; records do not depend on the split.
    void prep(GGMLType type, const float* src, int64_t K, int n, uint8_t* buf) {
        if (n < PREP_PARALLEL_MIN || pool.size() == 1) return prepare_acts(type, src, K, n, buf, rs.prec);
        auto task = [&](int, int ci, int nc) {
            int64_t b, e;
            split_range(n, ci, nc, 1, &b, &e);
            if (b < e) prepare_acts_range(type, src, K, n, static_cast<int>(b), static_cast<int>(e), buf, rs.prec);
        };
        pool.run(pool_chunks(pool, n, 1, CHUNKS_PER_THREAD), task);
    }

    // q, k, v = xb @ W^T, q and v plus their biases (the key bias is added as the key is stored:
    // kv_store), in one task over the three matrices' rows; matrices of one type share one prepared
    // activation.
    void qkv(const LayerWeights& L, int T) {
        const Matrix* W[3] = {&L.wq, &L.wk, &L.wv};
        float* y[3] = {rs.q.data(), rs.k.data(), rs.v.data()};
        const float* bias[3] = {L.bq, nullptr, L.bv};
        const float* xb = rs.xb.data();
        const int64_t K = L.wq.cols, rows = L.wq.rows + L.wk.rows + L.wv.rows;
        int act_of[3];
        for (int m = 0; m < 3; m++) {
            act_of[m] = m;
            for (int j = 0; j < m; j++)
                if (W[j]->type == W[m]->type) { act_of[m] = act_of[j]; break; }
            if (act_of[m] == m) prep(W[m]->type, xb, K, T, rs.act[m].data());
        }
        auto task = [&](int, int ci, int nc) {
            int64_t b, e;
            split_range(rows, ci, nc, ROW_ALIGN, &b, &e);
            int64_t off = 0;
            for (int m = 0; m < 3; m++) {
                const Matrix& Wm = *W[m];
                int64_t r0 = b - off < 0 ? 0 : b - off, r1 = e - off > Wm.rows ? Wm.rows : e - off;
                off += Wm.rows;
                if (r0 >= r1) continue;
                mm(Wm, K, r0, r1, rs.act[act_of[m]].data(), xb, T, y[m], Wm.rows);
                if (bias[m])
                    for (int t = 0; t < T; t++)
                        for (int64_t r = r0; r < r1; r++) y[m][t * Wm.rows + r] += bias[m][r];
            }
        };
        pool.run(pool_chunks(pool, rows, ROW_ALIGN, MATMUL_CHUNKS_PER_THREAD), task);
    }

    // y ([T][W.rows]) = epi(in @ W^T) for T vectors of W.cols, W's rows split over the pool.
    void project(const Matrix& W, const float* in, int T, float* y, Epi epi, const Matrix* up = nullptr) {
        const int64_t K = W.cols, R = W.rows;
        assert(epi != Epi::Add || in != rs.xb.data());
        assert(epi != Epi::SwiGLU || (up && up->rows == R && up->cols == K));
        prep(W.type, in, K, T, rs.act[0].data());
        const bool same_act = epi != Epi::SwiGLU || up->type == W.type;
        if (!same_act) prep(up->type, in, K, T, rs.act[1].data());
        float* p = epi == Epi::Add ? rs.xb.data() : y;
        auto task = [&](int, int ci, int nc) {
            int64_t r0, r1;
            split_range(R, ci, nc, ROW_ALIGN, &r0, &r1);
            if (r0 >= r1) return;
            mm(W, K, r0, r1, rs.act[0].data(), in, T, p, R);
            if (epi == Epi::Add) {
                for (int t = 0; t < T; t++)
                    for (int64_t r = r0; r < r1; r++) y[t * R + r] += p[t * R + r];
            } else if (epi == Epi::SwiGLU) {
                float* u = rs.hb2.data();
                mm(*up, K, r0, r1, rs.act[same_act ? 0 : 1].data(), in, T, u, R);
                for (int t = 0; t < T; t++) silu_mul(y + t * R + r0, u + t * R + r0, r1 - r0);
            }
        };
        pool.run(pool_chunks(pool, R, ROW_ALIGN, MATMUL_CHUNKS_PER_THREAD), task);
    }
};

}  // namespace

// ---------------------------------------------------------------------------- forward

void forward_chunk(const Model& model, KVCache& cache, ThreadPool& pool, RunState& rs,
                   const ChunkPlan& plan, const int32_t* tokens, const ChunkOutputs& out) {
    const Config& c = model.config();
    const Weights& w = model.weights();
    const int T = plan.T, E = c.n_embd, hd = c.head_dim;
    assert(T >= 1 && T <= rs.max_chunk && plan.n_pos <= rs.capacity && hd <= MAX_HEAD_DIM);
    Pass P{pool, rs};
    float* x = rs.x.data();
    float* xb = rs.xb.data();
    auto rmsnorm_rows = [&](float* dst, const float* src, const float* weight, int n) {
        for (int t = 0; t < n; t++) rmsnorm(dst + t * E, src + t * E, weight, E, c.rms_eps);
    };
    auto save_hidden = [&](int layer) {
        if (!out.hidden) return;
        float* dst = out.hidden + (static_cast<size_t>(layer) * out.hidden_T + out.hidden_t0) * E;
        std::memcpy(dst, x, sizeof(float) * T * E);
    };

    // RoPE angles of the chunk's rotation indices; embeddings
    for (int t = 0; t < T; t++)
        fill_rope_row(rs.theta.data(), hd, plan.rot0 + t, rs.rot_cos.data() + t * hd / 2, rs.rot_sin.data() + t * hd / 2);
    for (int t = 0; t < T; t++) {
        const Matrix& emb = w.token_embd;
        dequantize_row(emb.type, emb.data + static_cast<int64_t>(tokens[t]) * emb.row_bytes, x + t * E, E);
    }
    save_hidden(0);
    const int embed_layer = cache.embed_layer();  // semantic eviction pools this layer's output
    if (embed_layer == 0) cache.add_embedding(plan, rs.chunk_slot.data(), x);

    for (int l = 0; l < c.n_layer; l++) {
        const LayerWeights& L = w.layers[l];
        rmsnorm_rows(xb, x, L.attn_norm, T);                                // xb = rmsnorm(x)
        P.qkv(L, T);                                                        // q, k, v = xb @ W^T (+ bias)
        kv_store(c, L.bk, cache, l, pool, rs, plan);                        // rotated k, v -> cache slots
        attention(c, cache, l, pool, rs, plan);                             // att = softmax(q.k) @ v
        P.project(L.wo, rs.att.data(), T, x, Epi::Add);                     // x += att @ Wo^T
        rmsnorm_rows(xb, x, L.ffn_norm, T);                                 // xb = rmsnorm(x)
        P.project(L.w_gate, xb, T, rs.hb.data(), Epi::SwiGLU, &L.w_up);     // hb = silu(xb @ Wg^T) * (xb @ Wu^T)
        P.project(L.w_down, rs.hb.data(), T, x, Epi::Add);                  // x += hb @ Wd^T
        save_hidden(l + 1);
        if (embed_layer == l + 1) cache.add_embedding(plan, rs.chunk_slot.data(), x);
    }

    if (!out.logits) return;
    // logits = rmsnorm(x) @ Wout^T for the last token or all T
    const int n_out = out.all_logits ? T : 1;
    rmsnorm_rows(xb, x + (T - n_out) * E, w.output_norm, n_out);
    P.project(w.output, xb, n_out, out.logits, Epi::Store);
}

}  // namespace lg

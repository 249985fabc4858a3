// CudaEngine: runs forward chunks planned by lg::KVCache bookkeeping on the device state that
// engine_init.cu uploads and allocates, the decode step as a CUDA graph, and the public API.
// Knows nothing about Python; kernels live in matmul/attention/ops.
#include "engine_impl.cuh"

#include <algorithm>
#include <cstring>
#include <vector>

namespace lg {
namespace cuda {

// Upload meta, tokens, chunk slots and the position -> slot map of a planned chunk (one copy).
void CudaEngine::Impl::upload_plan(const ChunkPlan& plan, const int32_t* tokens) {
    ChunkMeta* m = reinterpret_cast<ChunkMeta*>(hint);
    m->T = plan.T;
    m->pos0 = plan.pos0;
    m->n_pos = plan.n_pos;
    m->step = 0;
    m->n_sink_pos = plan.n_sink_pos;
    m->pad = 0;
    m->rot0 = plan.rot0;
    std::memcpy(hint + META_INTS, tokens, sizeof(int32_t) * plan.T);
    const size_t n = META_INTS + 2 * static_cast<size_t>(max_chunk) + plan.n_pos;
    LG_CUDA_CHECK(cudaMemcpyAsync(dint, hint, n * sizeof(int32_t), cudaMemcpyHostToDevice, st));
}

Acts CudaEngine::Impl::prep(const float* xin, int K, int T, int type, int slot) {
    Acts a{nullptr, nullptr, nullptr, xin, act_block(type), records_per_vector(prec)};
    if (a.ablk == 0) return a;
    const ActSlot& s = act[slot];
    quantize_acts(xin, K, T, a.ablk, a.pair, s.q, s.d, s.s, st);
    a.q = s.q;
    a.d = s.d;
    a.s = s.s;
    return a;
}

// RMSNorm of T rows of xin by w into xb, and xb prepared for `type` (one launch when fused).
Acts CudaEngine::Impl::norm_prep(const float* xin, const float* w, int T, int type, int slot) {
    const Config& c = model.config();
    Acts a{nullptr, nullptr, nullptr, xb, act_block(type), records_per_vector(prec)};
    if (a.ablk == 0 || !fuse_on) {
        rmsnorm(xin, w, xb, c.n_embd, c.rms_eps, T, st);
        return prep(xb, c.n_embd, T, type, slot);
    }
    const ActSlot& s = act[slot];
    rmsnorm_quantize(xin, w, xb, c.n_embd, c.rms_eps, T, a.ablk, a.pair, s.q, s.d, s.s, st);
    a.q = s.q;
    a.d = s.d;
    a.s = s.s;
    return a;
}

// One chunk already uploaded: T tokens, n_chunks attention chunks to launch, logits of the
// last n_out tokens into `logits`, hidden rows to the host when hidden != nullptr.
void CudaEngine::Impl::forward(int T, int n_chunks, int n_out, float* hidden, int hidden_T, int hidden_t0) {
    const Config& c = model.config();
    const int E = c.n_embd, KV = c.kv_dim(), F = c.n_ff;
    auto save_hidden = [&](int layer) {
        if (!hidden) return;
        float* dst = hidden + (static_cast<size_t>(layer) * hidden_T + hidden_t0) * E;
        LG_CUDA_CHECK(cudaMemcpyAsync(dst, x, sizeof(float) * T * E, cudaMemcpyDeviceToHost, st));
    };
    embed(token_embd.type, token_embd.data, token_embd.row_bytes, E, d_tokens(), meta(), T, x, st);
    save_hidden(0);
    for (int l = 0; l < c.n_layer; l++) {
        const DevLayer& L = layers[l];
        float* kc = kcache + kv_layer * l;
        __half* vc = vcache + kv_layer * l;
        Acts aq = norm_prep(x, L.attn_norm, T, L.wq.type, 0);
        Acts ak = act_block(L.wk.type) == aq.ablk ? aq : prep(xb, E, T, L.wk.type, 1);
        Acts av = act_block(L.wv.type) == aq.ablk ? aq : act_block(L.wv.type) == ak.ablk ? ak : prep(xb, E, T, L.wv.type, 1);
        if (fuse_on && group_fusable(L.wq, L.wk, L.wv)) {
            const DevMatrix* W[3] = {&L.wq, &L.wk, &L.wv};
            float* const y[3] = {q, k, v};
            const int ldy[3] = {E, KV, KV};
            const float* const bias[3] = {L.bq, L.bk, L.bv};
            matmul3(W, aq, T, y, ldy, bias, st);
        } else {
            matmul(L.wq, aq, T, q, E, L.bq, Epi::Store, st);
            matmul(L.wk, ak, T, k, KV, L.bk, Epi::Store, st);
            matmul(L.wv, av, T, v, KV, L.bv, Epi::Store, st);
        }
        kv_store(ash, kc, vc, k, v, theta, d_chunk_slot(), meta(), T, st);
        attention(ash, kc, vc, q, d_pos_slot(), theta, rope_cos, rope_sin, meta(), T, n_chunks, part_acc, part_ml, att,
                  st);
        matmul(L.wo, prep(att, E, T, L.wo.type, 0), T, x, E, nullptr, Epi::Add, st);

        Acts au = norm_prep(x, L.ffn_norm, T, L.w_up.type, 0);
        if (fuse_on && swiglu_fusable(L.w_gate, L.w_up)) {
            matmul_swiglu(L.w_gate, L.w_up, au, T, hb, F, st);
        } else {
            Acts ag = act_block(L.w_gate.type) == au.ablk ? au : prep(xb, E, T, L.w_gate.type, 1);
            matmul(L.w_up, au, T, hb, F, nullptr, Epi::Store, st);
            matmul(L.w_gate, ag, T, hb, F, nullptr, Epi::SwiGLU, st);
        }
        matmul(L.w_down, prep(hb, F, T, L.w_down.type, 0), T, x, E, nullptr, Epi::Add, st);
        save_hidden(l + 1);
    }
    if (n_out == 0) return;
    matmul(output, norm_prep(x + static_cast<size_t>(T - n_out) * E, output_norm, n_out, output.type, 0), n_out, logits,
           c.n_vocab, nullptr, Epi::Store, st);
}

void CudaEngine::Impl::copy_logits(float* dst, int rows) {
    LG_CUDA_CHECK(cudaMemcpyAsync(dst, logits, sizeof(float) * rows * model.config().n_vocab, cudaMemcpyDeviceToHost, st));
}

// The decode step as a graph: forward(T=1) over the largest attention grid, choose the next
// token, advance meta on the device. Pointers and grids are fixed, so one capture serves
// every step at every cache fill.
void CudaEngine::Impl::capture_decode_graph(float temperature, uint64_t seed) {
    if (graph && graph_temp == temperature && graph_seed == seed && graph_fuse == fuse_on && graph_pdl == opts.pdl)
        return;
    if (graph) {
        cudaGraphExecDestroy(graph);
        graph = nullptr;
    }
    cudaGraph_t g = nullptr;
    LG_CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    try {
        forward(1, ash.max_chunks, 1, nullptr, 0, 0);
        argmax_rows(logits, model.config().n_vocab, 1, temperature, seed, meta(), arg_v, arg_i, dnext, st);
        advance_scratch(meta(), d_tokens(), d_chunk_slot(), d_pos_slot(), dnext, dout, st);
    } catch (...) {
        cudaStreamEndCapture(st, &g);
        if (g) cudaGraphDestroy(g);
        throw;
    }
    LG_CUDA_CHECK(cudaStreamEndCapture(st, &g));
    cudaError_t e = cudaGraphInstantiate(&graph, g, 0);
    cudaGraphDestroy(g);
    LG_CUDA_CHECK(e);
    graph_temp = temperature;
    graph_seed = seed;
    graph_fuse = fuse_on;
    graph_pdl = opts.pdl;
}

// ---------------------------------------------------------------------------- public API

CudaEngine::CudaEngine(const std::string& path, const EngineOptions& opt, int device) {
    int n_dev = 0;
    if (cudaGetDeviceCount(&n_dev) != cudaSuccess) {
        cudaGetLastError();
        n_dev = 0;
    }
    // Checked before the model is read: no device is the common case on CPU-only boxes.
    if (device < 0 || device >= n_dev)
        throw CudaError("CUDA device " + std::to_string(device) + " not available (" + std::to_string(n_dev) + " found)");
    p_.reset(new Impl(path, opt, device));
}
CudaEngine::~CudaEngine() = default;

const Config& CudaEngine::config() const { return p_->model.config(); }
const KVCache& CudaEngine::cache() const { return p_->book; }
int CudaEngine::max_chunk() const { return p_->max_chunk; }
size_t CudaEngine::device_bytes() const { return p_->wbytes + p_->sbytes; }
size_t CudaEngine::kv_bytes() const {
    return p_->kv_layer * p_->model.config().n_layer * (sizeof(float) + sizeof(__half));
}
int64_t CudaEngine::bytes_per_token() const { return p_->model.bytes_per_token(); }
std::string CudaEngine::device() const { return device_name(p_->device); }
ActPrecision CudaEngine::act_precision() const { return p_->prec; }
void CudaEngine::set_use_graph(bool on) { p_->graph_on = on; }
bool CudaEngine::use_graph() const { return p_->graph_on; }
void CudaEngine::set_fuse(bool on) { p_->fuse_on = on; }
bool CudaEngine::fuse() const { return p_->fuse_on; }
void CudaEngine::set_pdl(bool on) { p_->opts.pdl = on; }
bool CudaEngine::pdl() const { return p_->opts.pdl; }
void CudaEngine::set_mma(bool on) { p_->opts.mma = on; }
bool CudaEngine::mma() const { return p_->opts.mma; }

static void check_tokens(const Config& c, const int32_t* tokens, int n) {
    if (n < 1) throw std::invalid_argument("need at least one token");
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= c.n_vocab)
            throw std::invalid_argument("token " + std::to_string(tokens[i]) + " at index " + std::to_string(i) +
                                        " is outside the vocabulary [0, " + std::to_string(c.n_vocab) + ")");
}

void CudaEngine::prefill_stream(const int32_t* tokens, int n, float* logits, bool all_logits) {
    Impl& I = *p_;
    I.begin();
    check_tokens(config(), tokens, n);
    if (I.book.scratch_used() != 0)
        throw std::logic_error("prefill_stream while a job holds " + std::to_string(I.book.scratch_used()) +
                               " scratch tokens: rollback(0) first");
    const int V = config().n_vocab;
    for (int done = 0; done < n;) {
        const int T = std::min({n - done, I.max_chunk, I.book.stream_chunk_limit()});
        ChunkPlan plan = I.book.plan_stream(T, I.h_chunk_slot(), I.h_pos_slot());
        I.upload_plan(plan, tokens + done);
        const bool last = done + T == n;
        const int n_out = (logits && all_logits) ? T : (logits && last ? 1 : 0);
        I.forward(T, (plan.n_pos + ATT_CHUNK - 1) / ATT_CHUNK, n_out, nullptr, 0, 0);
        if (n_out) I.copy_logits(all_logits ? logits + static_cast<size_t>(done) * V : logits, n_out);
        I.sync();  // the pinned plan buffer is rewritten by the next chunk
        done += T;
    }
}

void CudaEngine::forward_scratch(const int32_t* tokens, int n, float* logits, bool all_logits) {
    Impl& I = *p_;
    I.begin();
    check_tokens(config(), tokens, n);
    if (n > I.book.scratch_free())
        throw std::length_error("forward_scratch of " + std::to_string(n) + " tokens: scratch has " +
                                std::to_string(I.book.scratch_free()) + " of n_scratch = " +
                                std::to_string(I.book.n_scratch()) + " slots free");
    const int V = config().n_vocab;
    for (int done = 0; done < n;) {
        const int T = std::min(n - done, I.max_chunk);
        ChunkPlan plan = I.book.plan_scratch(T, I.h_chunk_slot(), I.h_pos_slot());
        I.upload_plan(plan, tokens + done);
        const bool last = done + T == n;
        const int n_out = (logits && all_logits) ? T : (logits && last ? 1 : 0);
        I.forward(T, (plan.n_pos + ATT_CHUNK - 1) / ATT_CHUNK, n_out, nullptr, 0, 0);
        if (n_out) I.copy_logits(all_logits ? logits + static_cast<size_t>(done) * V : logits, n_out);
        I.sync();
        done += T;
    }
}

void CudaEngine::forward_hidden(const int32_t* tokens, int n, float* hidden, float* logits) {
    Impl& I = *p_;
    I.begin();
    check_tokens(config(), tokens, n);
    if (n > I.book.scratch_free())
        throw std::length_error("forward_hidden of " + std::to_string(n) + " tokens: scratch has " +
                                std::to_string(I.book.scratch_free()) + " slots free");
    const int start = I.book.scratch_used();
    const int V = config().n_vocab;
    for (int done = 0; done < n;) {
        const int T = std::min(n - done, I.max_chunk);
        ChunkPlan plan = I.book.plan_scratch(T, I.h_chunk_slot(), I.h_pos_slot());
        I.upload_plan(plan, tokens + done);
        I.forward(T, (plan.n_pos + ATT_CHUNK - 1) / ATT_CHUNK, logits ? T : 0, hidden, n, done);
        if (logits) I.copy_logits(logits + static_cast<size_t>(done) * V, T);
        I.sync();
        done += T;
    }
    I.book.rollback(start);
}

void CudaEngine::rollback(int n) { p_->book.rollback(n); }

int32_t CudaEngine::forward_scratch_next(const int32_t* tokens, int n, float temperature, uint64_t seed) {
    Impl& I = *p_;
    I.begin();
    forward_scratch(tokens, n, nullptr, false);  // all but the logits of the last chunk
    // forward_scratch computed no logits; recompute the head for the last token only.
    const Config& c = config();
    const int last_T = (n - 1) % I.max_chunk + 1;
    matmul(I.output, I.norm_prep(I.x + static_cast<size_t>(last_T - 1) * c.n_embd, I.output_norm, 1, I.output.type, 0),
           1, I.logits, c.n_vocab, nullptr, Epi::Store, I.st);
    argmax_rows(I.logits, c.n_vocab, 1, temperature, seed, I.meta(), I.arg_v, I.arg_i, I.dnext, I.st);
    LG_CUDA_CHECK(cudaMemcpyAsync(I.hnext, I.dnext, sizeof(int32_t), cudaMemcpyDeviceToHost, I.st));
    I.sync();
    return I.hnext[0];
}

void CudaEngine::decode(int32_t first, int n_steps, int32_t* out, float temperature, uint64_t seed) {
    Impl& I = *p_;
    I.begin();
    check_tokens(config(), &first, 1);
    if (n_steps < 1) return;
    if (n_steps > I.book.scratch_free())
        throw std::length_error("decode of " + std::to_string(n_steps) + " steps: scratch has " +
                                std::to_string(I.book.scratch_free()) + " slots free");
    const int V = config().n_vocab;
    ChunkPlan plan = I.book.plan_scratch(1, I.h_chunk_slot(), I.h_pos_slot());
    I.upload_plan(plan, &first);
    // The device advances its own plan; the host bookkeeping follows without touching hint.
    for (int i = 1; i < n_steps; i++) I.book.plan_scratch(1, I.plan_chunk.data(), I.plan_pos.data());
    if (I.graph_on) {
        I.capture_decode_graph(temperature, seed);
        for (int i = 0; i < n_steps; i++) LG_CUDA_CHECK(cudaGraphLaunch(I.graph, I.st));
    } else {
        for (int i = 0; i < n_steps; i++) {
            I.forward(1, I.ash.max_chunks, 1, nullptr, 0, 0);
            argmax_rows(I.logits, V, 1, temperature, seed, I.meta(), I.arg_v, I.arg_i, I.dnext, I.st);
            advance_scratch(I.meta(), I.d_tokens(), I.d_chunk_slot(), I.d_pos_slot(), I.dnext, I.dout, I.st);
        }
    }
    LG_CUDA_CHECK(cudaMemcpyAsync(out, I.dout, sizeof(int32_t) * n_steps, cudaMemcpyDeviceToHost, I.st));
    I.sync();
}

uint64_t CudaEngine::stream_checksum() const {
    // KVCache::stream_checksum's StreamHash over this cache's rows (fp32 keys, fp16 values),
    // positions in stream order (sink, then ring oldest first).
    const Impl& I = *p_;
    const Config& c = config();
    const KVCache& b = I.book;
    const int hd = c.head_dim, n = b.stream_len();
    // h_pos_slot() holds the last plan's position -> slot map; its stream prefix (sink, ring)
    // only changes with plan_stream, so it is the stream order now.
    std::vector<float> kh(I.kv_layer * c.n_layer);
    std::vector<uint16_t> vh(I.kv_layer * c.n_layer);
    LG_CUDA_CHECK(cudaMemcpy(kh.data(), I.kcache, kh.size() * sizeof(float), cudaMemcpyDeviceToHost));
    LG_CUDA_CHECK(cudaMemcpy(vh.data(), I.vcache, vh.size() * sizeof(uint16_t), cudaMemcpyDeviceToHost));
    StreamHash hash;
    hash.mix(static_cast<uint64_t>(b.sink_used()));
    hash.mix(static_cast<uint64_t>(b.ring_used()));
    hash.mix(static_cast<uint64_t>(b.stream_total()));
    for (int l = 0; l < c.n_layer; l++)
        for (int hh = 0; hh < c.n_head_kv; hh++) {
            const size_t base = l * I.kv_layer + static_cast<size_t>(hh) * b.capacity() * hd;
            for (int p = 0; p < n; p++) {
                const size_t off = base + static_cast<size_t>(I.h_pos_slot()[p]) * hd;
                hash.mix_bytes(kh.data() + off, hd * sizeof(float));
                hash.mix_bytes(vh.data() + off, hd * sizeof(uint16_t));
            }
        }
    return hash.h;
}

}  // namespace cuda
}  // namespace lg

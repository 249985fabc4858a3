// CudaEngine::Impl's construction: checks the model against what the backend runs, uploads the
// weights (one allocation), allocates the device state (one allocation) and the RoPE tables.
#include "engine_impl.cuh"

#include <algorithm>
#include <cstring>

namespace lg {
namespace cuda {

static constexpr size_t MAX_SMEM = 48 * 1024;
static constexpr size_t WEIGHT_SLACK = 64;
static constexpr int KV_BOOKKEEPING_DIM = 4;  // the host KVCache only plans slots: tiny rows

static void check_matrix(const std::string& path, const char* name, const Matrix& m) {
    if (!matmul_type_supported(static_cast<int>(m.type)))
        throw CudaError(path + ": tensor " + name + " has type " + ggml_type_name(m.type) +
                        ", which the CUDA backend does not run (F32, F16, Q4_0, Q4_1, Q5_0, Q8_0, Q4_K, Q6_K)");
    if (m.cols % act_block(static_cast<int>(m.type)) != 0 || m.cols % UNIT != 0)
        throw CudaError(path + ": tensor " + name + " row length " + std::to_string(m.cols) +
                        " is not a multiple of its block size");
}

DevMatrix CudaEngine::Impl::upload(const Matrix& m, std::map<const uint8_t*, const uint8_t*>& placed, Arena& a,
                                   bool copy) {
    DevMatrix d;
    d.type = static_cast<int>(m.type);
    d.rows = m.rows;
    d.cols = m.cols;
    d.row_bytes = m.row_bytes;
    d.lpr = pick_lanes_per_row(m.rows, m.cols);
    auto it = placed.find(m.data);
    if (it != placed.end()) {  // tied embeddings: one copy
        d.data = it->second;
        return d;
    }
    const size_t n = static_cast<size_t>(m.rows) * m.row_bytes;
    uint8_t* dst = a.take<uint8_t>(n);
    if (copy) {
        LG_CUDA_CHECK(cudaMemcpy(dst, m.data, n, cudaMemcpyHostToDevice));
        placed[m.data] = dst;
    }
    d.data = dst;
    return d;
}

const float* CudaEngine::Impl::upload_vec(const float* v, int64_t n, std::map<const uint8_t*, const uint8_t*>& placed,
                                          Arena& a, bool copy) {
    if (!v) return nullptr;
    float* dst = a.take<float>(n);
    if (copy) LG_CUDA_CHECK(cudaMemcpy(dst, v, n * sizeof(float), cudaMemcpyHostToDevice));
    return dst;
}

static void check_weights(const std::string& path, const Weights& w) {
    check_matrix(path, "token_embd.weight", w.token_embd);
    check_matrix(path, "output.weight", w.output);
    for (size_t l = 0; l < w.layers.size(); l++) {
        const LayerWeights& L = w.layers[l];
        const std::string p = "blk." + std::to_string(l) + ".";
        check_matrix(path, (p + "attn_q.weight").c_str(), L.wq);
        check_matrix(path, (p + "attn_k.weight").c_str(), L.wk);
        check_matrix(path, (p + "attn_v.weight").c_str(), L.wv);
        check_matrix(path, (p + "attn_output.weight").c_str(), L.wo);
        check_matrix(path, (p + "ffn_gate.weight").c_str(), L.w_gate);
        check_matrix(path, (p + "ffn_up.weight").c_str(), L.w_up);
        check_matrix(path, (p + "ffn_down.weight").c_str(), L.w_down);
    }
}

void CudaEngine::Impl::upload_weights() {
    const Config& c = model.config();
    const Weights& w = model.weights();
    // ---- weights: size, allocate once, copy
    for (int pass = 0; pass < 2; pass++) {
        const bool copy = pass == 1;
        Arena a;
        a.base = wbuf;
        std::map<const uint8_t*, const uint8_t*> placed;
        token_embd = upload(w.token_embd, placed, a, copy);
        output = upload(w.output, placed, a, copy);
        output_norm = upload_vec(w.output_norm, c.n_embd, placed, a, copy);
        layers.assign(w.layers.size(), DevLayer{});
        for (size_t l = 0; l < w.layers.size(); l++) {
            const LayerWeights& L = w.layers[l];
            DevLayer& D = layers[l];
            D.attn_norm = upload_vec(L.attn_norm, c.n_embd, placed, a, copy);
            D.ffn_norm = upload_vec(L.ffn_norm, c.n_embd, placed, a, copy);
            D.bq = upload_vec(L.bq, L.wq.rows, placed, a, copy);
            D.bk = upload_vec(L.bk, L.wk.rows, placed, a, copy);
            D.bv = upload_vec(L.bv, L.wv.rows, placed, a, copy);
            D.wq = upload(L.wq, placed, a, copy);
            D.wk = upload(L.wk, placed, a, copy);
            D.wv = upload(L.wv, placed, a, copy);
            // q, k and v read the same activations and may share a launch (matmul3): one lane count
            // for the three, chosen for their rows together
            D.wq.lpr = D.wk.lpr = D.wv.lpr = pick_lanes_per_row(L.wq.rows + L.wk.rows + L.wv.rows, L.wq.cols);
            D.wo = upload(L.wo, placed, a, copy);
            D.w_gate = upload(L.w_gate, placed, a, copy);
            D.w_up = upload(L.w_up, placed, a, copy);
            D.w_down = upload(L.w_down, placed, a, copy);
        }
        if (pass == 0) {
            wbytes = a.used + WEIGHT_SLACK;  // ld_words_a2 may read a few bytes past the last block
            LG_CUDA_CHECK(cudaMalloc(&wbuf, wbytes));
            LG_CUDA_CHECK(cudaMemset(wbuf, 0, wbytes));
        }
    }
}

void CudaEngine::Impl::alloc_state() {
    const Config& c = model.config();
    const int cap = book.capacity();
    // ---- state: size, allocate once, zero
    const size_t mc = max_chunk, E = c.n_embd, KV = c.kv_dim(), F = c.n_ff, V = c.n_vocab;
    const size_t Kmax = std::max(E, F);
    kv_layer = static_cast<size_t>(c.n_head_kv) * cap * c.head_dim;
    for (int pass = 0; pass < 2; pass++) {
        Arena a;
        a.base = sbuf;
        x = a.take<float>(mc * E);
        xb = a.take<float>(mc * E);
        q = a.take<float>(mc * E);
        k = a.take<float>(mc * KV);
        v = a.take<float>(mc * KV);
        att = a.take<float>(mc * E);
        hb = a.take<float>(mc * F);
        logits = a.take<float>(mc * V);
        for (ActSlot& s : act) {
            s.q = a.take<int8_t>(mc * MAX_PAIR * Kmax);
            s.d = a.take<float>(mc * MAX_PAIR * Kmax / UNIT);
            s.s = a.take<int32_t>(mc * MAX_PAIR * Kmax / UNIT);
        }
        kcache = a.take<float>(kv_layer * c.n_layer);
        vcache = a.take<__half>(kv_layer * c.n_layer);
        theta = a.take<double>(c.head_dim / 2);
        rope_cos = a.take<float>(static_cast<size_t>(cap) * c.head_dim / 2);
        rope_sin = a.take<float>(static_cast<size_t>(cap) * c.head_dim / 2);
        part_acc = a.take<float>(mc * c.n_head * ash.max_chunks * c.head_dim);
        part_ml = a.take<float>(mc * c.n_head * ash.max_chunks * 2);
        dint = a.take<int32_t>(META_INTS + 2 * mc + cap);
        dnext = a.take<int32_t>(mc);
        arg_v = a.take<float>(ARGMAX_SLICES);
        arg_i = a.take<int32_t>(ARGMAX_SLICES);
        dout = a.take<int32_t>(book.n_scratch());
        if (pass == 0) {
            sbytes = a.used;
            LG_CUDA_CHECK(cudaMalloc(&sbuf, sbytes));
            LG_CUDA_CHECK(cudaMemset(sbuf, 0, sbytes));
        }
    }
}

void CudaEngine::Impl::upload_rope() {
    const Config& c = model.config();
    const int cap = book.capacity();
    // RoPE by position (queries for sink keys) with the CPU engine's functions (native/ops.h);
    // the frequencies themselves for rotation indexes (attention.cuh).
    const int hd = c.head_dim;
    std::vector<double> th(hd / 2);
    rope_frequencies(c.rope_theta, hd, th.data());
    std::vector<float> cs(static_cast<size_t>(cap) * hd / 2), sn(cs.size());
    for (int p = 0; p < cap; p++)
        fill_rope_row(th.data(), hd, p, cs.data() + static_cast<size_t>(p) * hd / 2, sn.data() + static_cast<size_t>(p) * hd / 2);
    LG_CUDA_CHECK(cudaMemcpy(theta, th.data(), th.size() * sizeof(double), cudaMemcpyHostToDevice));
    LG_CUDA_CHECK(cudaMemcpy(rope_cos, cs.data(), cs.size() * sizeof(float), cudaMemcpyHostToDevice));
    LG_CUDA_CHECK(cudaMemcpy(rope_sin, sn.data(), sn.size() * sizeof(float), cudaMemcpyHostToDevice));
}

CudaEngine::Impl::Impl(const std::string& path, const EngineOptions& o, int dev)
    : model(path),
      book(1, 1, KV_BOOKKEEPING_DIM, o.n_sink, o.n_ring, o.n_scratch, o.kv_policy),
      device(dev),
      max_chunk(o.max_chunk),
      prec(o.act_precision) {
    const Config& c = model.config();
    const int cap = book.capacity();
    if (cap > c.n_ctx_train)
        throw std::invalid_argument(path + ": n_sink + n_ring + n_scratch = " + std::to_string(cap) +
                                    " exceeds the model's trained context length " + std::to_string(c.n_ctx_train));
    if (max_chunk < 1 || max_chunk > 4096) throw std::invalid_argument("max_chunk must be in 1..4096");
    if (c.n_head % c.n_head_kv != 0 || c.n_head / c.n_head_kv > MAX_GROUP)
        throw CudaError(path + ": n_head / n_head_kv must be an integer <= " + std::to_string(MAX_GROUP));
    if (c.head_dim % 8 != 0 || c.head_dim > MAX_HEAD_DIM_CUDA)
        throw CudaError(path + ": head_dim " + std::to_string(c.head_dim) + " unsupported (a multiple of 8, <= 256)");
    ash = AttnShape{c.n_head, c.n_head_kv, c.head_dim, cap, c.rope_style == RopeStyle::Neox,
                    (cap + ATT_CHUNK - 1) / ATT_CHUNK};
    const size_t smem = attention_smem_bytes(ash);
    if (smem > MAX_SMEM) throw CudaError(path + ": attention tile needs " + std::to_string(smem) + " bytes of shared memory");

    int n_dev = 0;
    if (cudaGetDeviceCount(&n_dev) != cudaSuccess || dev < 0 || dev >= n_dev)
        throw CudaError("CUDA device " + std::to_string(dev) + " not available (" + std::to_string(n_dev) + " found)");
    LG_CUDA_CHECK(cudaSetDevice(dev));
    LG_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));

    check_weights(path, model.weights());
    upload_weights();
    alloc_state();
    upload_rope();

    const size_t mc = max_chunk;
    LG_CUDA_CHECK(cudaMallocHost(&hint, sizeof(int32_t) * (META_INTS + 2 * mc + cap)));
    LG_CUDA_CHECK(cudaMallocHost(&hnext, sizeof(int32_t) * mc));
    std::memset(hint, 0, sizeof(int32_t) * (META_INTS + 2 * mc + cap));
    plan_chunk.resize(mc);
    plan_pos.resize(cap);
}

CudaEngine::Impl::~Impl() {
    if (graph) cudaGraphExecDestroy(graph);
    if (st) cudaStreamDestroy(st);
    cudaFree(wbuf);
    cudaFree(sbuf);
    cudaFreeHost(hint);
    cudaFreeHost(hnext);
}

}  // namespace cuda
}  // namespace lg

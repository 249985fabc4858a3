// Model: GGUF metadata -> Config, tensors -> Weights (pointers into the mmap), with checks
// that name the key or tensor. Knows nothing about the forward pass or the KV cache.
#include "model.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "quant.h"

namespace lg {

namespace {

std::string shape_str(const std::vector<int64_t>& ne) {
    std::string s = "[";
    for (size_t i = 0; i < ne.size(); i++) s += (i ? ", " : "") + std::to_string(ne[i]);
    return s + "]";
}

// A 2-D weight [rows][cols] stored as ggml ne = {cols, rows}.
Matrix matrix(const GGUFFile& f, const std::string& name, int64_t rows, int64_t cols) {
    const GGUFTensorInfo& t = f.tensor(name);
    if (t.ne.size() != 2 || t.ne[0] != cols || t.ne[1] != rows)
        throw ModelError(f.path() + ": tensor " + name + " has shape " + shape_str(t.ne) +
                         ", expected [" + std::to_string(cols) + ", " + std::to_string(rows) + "]");
    if (!quant_supported(t.type))
        throw ModelError(f.path() + ": tensor " + name + " has type " + ggml_type_name(t.type) +
                         ", which the engine does not support");
    return Matrix{t.data, t.type, rows, cols, t.row_bytes()};
}

const float* vec_f32(const GGUFFile& f, const std::string& name, int64_t n, bool optional = false) {
    const GGUFTensorInfo* t = f.find_tensor(name);
    if (!t) {
        if (optional) return nullptr;
        throw ModelError(f.path() + ": tensor " + name + " is missing");
    }
    if (t->type != GGMLType::F32 || t->n_elements() != n)
        throw ModelError(f.path() + ": tensor " + name + " must be F32 with " + std::to_string(n) +
                         " elements, got " + ggml_type_name(t->type) + " " + shape_str(t->ne));
    return reinterpret_cast<const float*>(t->data);
}

int positive(const GGUFFile& f, const std::string& key, int64_t v, int64_t max) {
    if (v <= 0 || v > max)
        throw ModelError(f.path() + ": metadata " + key + " = " + std::to_string(v) +
                         " is out of range (1.." + std::to_string(max) + ")");
    return static_cast<int>(v);
}

}  // namespace

// Sanity bounds on metadata, so a corrupt file fails here rather than in an allocation.
static constexpr int64_t MAX_LAYERS = 1024;
static constexpr int64_t MAX_DIM = 1 << 17;
static constexpr int64_t MAX_VOCAB = 1 << 21;
static constexpr int64_t MAX_CTX = 1 << 24;

Model::Model(const std::string& path) : file_(std::make_unique<GGUFFile>(path)) {
    const GGUFFile& f = *file_;
    Config& c = cfg_;
    c.arch = f.get_string("general.architecture");
    if (c.arch == "qwen2") {
        c.rope_style = RopeStyle::Neox;
        c.qkv_bias = true;
    } else if (c.arch == "llama") {
        c.rope_style = RopeStyle::Interleaved;
        c.qkv_bias = false;
    } else {
        throw ModelError(path + ": general.architecture = '" + c.arch +
                         "' is not supported (qwen2, llama)");
    }
    const std::string a = c.arch + ".";
    c.n_layer = positive(f, a + "block_count", f.get_int(a + "block_count"), MAX_LAYERS);
    c.n_embd = positive(f, a + "embedding_length", f.get_int(a + "embedding_length"), MAX_DIM);
    c.n_ff = positive(f, a + "feed_forward_length", f.get_int(a + "feed_forward_length"), MAX_DIM);
    c.n_head = positive(f, a + "attention.head_count", f.get_int(a + "attention.head_count"), MAX_DIM);
    c.n_head_kv = positive(f, a + "attention.head_count_kv",
                           f.get_int(a + "attention.head_count_kv", c.n_head), MAX_DIM);
    c.n_ctx_train = positive(f, a + "context_length", f.get_int(a + "context_length"), MAX_CTX);
    c.rope_theta = f.get_float(a + "rope.freq_base", 10000.0);
    c.rms_eps = static_cast<float>(f.get_float(a + "attention.layer_norm_rms_epsilon"));
    if (c.n_embd % c.n_head != 0 || c.n_head % c.n_head_kv != 0)
        throw ModelError(path + ": n_embd " + std::to_string(c.n_embd) + ", n_head " +
                         std::to_string(c.n_head) + ", n_head_kv " + std::to_string(c.n_head_kv) +
                         " are inconsistent (n_head must divide n_embd, n_head_kv must divide n_head)");
    c.head_dim = c.n_embd / c.n_head;
    if (c.head_dim % 2 != 0) throw ModelError(path + ": head_dim must be even for RoPE");
    int64_t key_len = f.get_int(a + "attention.key_length", c.head_dim);
    int64_t rope_dims = f.get_int(a + "rope.dimension_count", c.head_dim);
    if (key_len != c.head_dim || rope_dims != c.head_dim)
        throw ModelError(path + ": attention.key_length " + std::to_string(key_len) +
                         " / rope.dimension_count " + std::to_string(rope_dims) +
                         " differ from n_embd / n_head = " + std::to_string(c.head_dim) +
                         " (partial rotary or odd head sizes are not supported)");
    if (const GGUFValue* st = f.find(a + "rope.scaling.type")) {
        std::string s = f.get_string(a + "rope.scaling.type");
        (void)st;
        if (s != "none")
            throw ModelError(path + ": " + a + "rope.scaling.type = '" + s + "' is not supported");
    }
    if (c.rms_eps <= 0.0f || c.rope_theta <= 0.0)
        throw ModelError(path + ": rms epsilon and rope.freq_base must be positive");

    const GGUFTensorInfo& emb = f.tensor("token_embd.weight");
    if (emb.ne.size() != 2 || emb.ne[0] != c.n_embd)
        throw ModelError(path + ": token_embd.weight has shape " + shape_str(emb.ne) +
                         ", expected [" + std::to_string(c.n_embd) + ", n_vocab]");
    c.n_vocab = positive(f, "token_embd.weight ne[1]", emb.ne[1], MAX_VOCAB);
    int64_t meta_vocab = f.get_int(a + "vocab_size", c.n_vocab);
    if (meta_vocab != c.n_vocab)
        throw ModelError(path + ": " + a + "vocab_size = " + std::to_string(meta_vocab) +
                         " but token_embd.weight has " + std::to_string(c.n_vocab) + " rows");

    const int64_t E = c.n_embd, KV = c.kv_dim(), F = c.n_ff;
    w_.token_embd = matrix(f, "token_embd.weight", c.n_vocab, E);
    w_.output_norm = vec_f32(f, "output_norm.weight", E);
    c.tied_embeddings = f.find_tensor("output.weight") == nullptr;
    w_.output = c.tied_embeddings ? w_.token_embd : matrix(f, "output.weight", c.n_vocab, E);
    w_.layers.resize(c.n_layer);
    for (int l = 0; l < c.n_layer; l++) {
        const std::string p = "blk." + std::to_string(l) + ".";
        LayerWeights& L = w_.layers[l];
        L.attn_norm = vec_f32(f, p + "attn_norm.weight", E);
        L.wq = matrix(f, p + "attn_q.weight", E, E);
        L.wk = matrix(f, p + "attn_k.weight", KV, E);
        L.wv = matrix(f, p + "attn_v.weight", KV, E);
        L.bq = vec_f32(f, p + "attn_q.bias", E, !c.qkv_bias);
        L.bk = vec_f32(f, p + "attn_k.bias", KV, !c.qkv_bias);
        L.bv = vec_f32(f, p + "attn_v.bias", KV, !c.qkv_bias);
        L.wo = matrix(f, p + "attn_output.weight", E, E);
        L.ffn_norm = vec_f32(f, p + "ffn_norm.weight", E);
        L.w_gate = matrix(f, p + "ffn_gate.weight", F, E);
        L.w_up = matrix(f, p + "ffn_up.weight", F, E);
        L.w_down = matrix(f, p + "ffn_down.weight", E, F);
    }
}

int64_t Model::bytes_per_token() const {
    auto bytes = [](const Matrix& m) { return m.rows * m.row_bytes; };
    int64_t total = w_.token_embd.row_bytes + bytes(w_.output);
    for (const LayerWeights& L : w_.layers)
        total += bytes(L.wq) + bytes(L.wk) + bytes(L.wv) + bytes(L.wo) + bytes(L.w_gate) +
                 bytes(L.w_up) + bytes(L.w_down);
    return total;
}

int Model::pack_matrices() {
    int n = 0;
    const long page = sysconf(_SC_PAGESIZE);
    auto pack = [&](Matrix& m) {
        if (m.packed || !pack_type(m.type) || m.rows % PACK_ROWS != 0) return;
        uint8_t* p = const_cast<uint8_t*>(m.data);  // the file's MAP_PRIVATE mapping: writes stay in this process
        const int64_t bytes = m.rows * m.row_bytes;
        const uintptr_t lo = reinterpret_cast<uintptr_t>(p) / page * page;
        const uintptr_t hi = (reinterpret_cast<uintptr_t>(p) + bytes + page - 1) / page * page;
        if (mprotect(reinterpret_cast<void*>(lo), hi - lo, PROT_READ | PROT_WRITE) != 0)
            throw ModelError(file_->path() + ": cannot make the weights writable to pack them: " + std::strerror(errno));
        pack_weights(m.type, p, m.rows, m.cols);
        mprotect(reinterpret_cast<void*>(lo), hi - lo, PROT_READ);  // read-only again; a failure only loses a guard
        m.packed = true;
        ++n;
    };
    for (LayerWeights& L : w_.layers)
        for (Matrix* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) pack(*m);
    if (!cfg_.tied_embeddings) pack(w_.output);
    packed_ += n;
    return n;
}

}  // namespace lg

// Model: hyper-parameters read from GGUF metadata (qwen2, llama) and weights as flat pointers
// into the mmap (used in place, never expanded). Knows nothing about the KV cache or threads.
#pragma once
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "gguf.h"

namespace lg {

struct ModelError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

enum class RopeStyle {
    Neox,        // pairs (x[i], x[i + head_dim/2]): qwen2
    Interleaved  // pairs (x[2i], x[2i+1]): llama in GGUF (convert permutes Q/K rows to this)
};

struct Config {
    std::string arch;      // "qwen2" | "llama"
    int n_layer = 0;
    int n_head = 0;
    int n_head_kv = 0;
    int n_embd = 0;
    int n_ff = 0;
    int n_vocab = 0;
    int head_dim = 0;      // n_embd / n_head
    int n_ctx_train = 0;
    double rope_theta = 10000.0;
    float rms_eps = 1e-6f;
    RopeStyle rope_style = RopeStyle::Neox;
    bool qkv_bias = false;
    bool tied_embeddings = false;  // output.weight absent: logits use token_embd
    int kv_dim() const { return n_head_kv * head_dim; }
};

// A weight matrix in place: rows of `cols` elements of `type`, row-major, row stride row_bytes.
struct Matrix {
    const uint8_t* data = nullptr;
    GGMLType type = GGMLType::F32;
    int64_t rows = 0;
    int64_t cols = 0;
    int64_t row_bytes = 0;
    bool packed = false;  // rows in groups of PACK_ROWS, interleaved (quant.h: pack_weights): matmul_packed
};

struct LayerWeights {
    const float* attn_norm;  // [n_embd]
    Matrix wq;               // [n_embd rows][n_embd cols]  (rows = n_head * head_dim)
    Matrix wk;               // [kv_dim][n_embd]
    Matrix wv;               // [kv_dim][n_embd]
    const float* bq;         // [n_embd] or nullptr (qwen2 only)
    const float* bk;         // [kv_dim] or nullptr
    const float* bv;         // [kv_dim] or nullptr
    Matrix wo;               // [n_embd][n_embd]
    const float* ffn_norm;   // [n_embd]
    Matrix w_gate;           // [n_ff][n_embd]
    Matrix w_up;             // [n_ff][n_embd]
    Matrix w_down;           // [n_embd][n_ff]
};

struct Weights {
    Matrix token_embd;              // [n_vocab][n_embd]; rows dequantized on lookup
    std::vector<LayerWeights> layers;  // [n_layer]
    const float* output_norm;       // [n_embd]
    Matrix output;                  // [n_vocab][n_embd]; == token_embd when tied
};

class Model {
public:
    // Throws ModelError/GGUFError naming the file and the key or tensor at fault.
    explicit Model(const std::string& path);
    const Config& config() const { return cfg_; }
    const Weights& weights() const { return w_; }
    const GGUFFile& file() const { return *file_; }
    // Bytes of weights one decode step reads (all matrices + one embedding row).
    int64_t bytes_per_token() const;
    // Packs in place (quant.h: pack_weights) every matrix whose type and row count have a packed layout:
    // the pages become private copies of the file's, so the weights stay one copy. token_embd (a row
    // lookup) and an output matrix tied to it stay as they are. Before any forward pass; returns the
    // number of matrices packed (0 on a second call).
    int pack_matrices();
    int packed_matrices() const { return packed_; }

private:
    std::unique_ptr<GGUFFile> file_;
    Config cfg_;
    Weights w_;
    int packed_ = 0;
};

}  // namespace lg

// CudaEngine::Impl, shared by engine.cu (forward, decode graph, public API) and engine_init.cu
// (weight upload, device state allocation): device weights, cache, activations and the pinned
// host mirrors of one engine.
#pragma once
#include "backend.h"

#include <map>
#include <string>
#include <vector>

#include "attention.cuh"
#include "matmul.cuh"
#include "ops.cuh"

namespace lg {
namespace cuda {

static constexpr size_t DEV_ALIGN = 256;

// Bump allocator over one device allocation: a first pass with base == nullptr sizes it.
struct Arena {
    uint8_t* base = nullptr;
    size_t used = 0;
    template <class T>
    T* take(size_t n) {
        used = (used + DEV_ALIGN - 1) / DEV_ALIGN * DEV_ALIGN;
        T* p = reinterpret_cast<T*>(base + used);
        used += n * sizeof(T);
        return base ? p : nullptr;
    }
};

struct DevLayer {
    const float *attn_norm, *ffn_norm, *bq, *bk, *bv;
    DevMatrix wq, wk, wv, wo, w_gate, w_up, w_down;
};

struct ActSlot {
    int8_t* q;
    float* d;
    int32_t* s;
};

struct CudaEngine::Impl {
    Model model;
    KVCache book;  // slot planning only, identical rules to the CPU engine's cache
    int device;
    int max_chunk;
    ActPrecision prec;
    bool graph_on = true;
    bool fuse_on = true;  // rmsnorm+quantize, q+k+v and gate+up in one launch each (same values)
    LaunchOpts opts;      // programmatic dependent launches, tensor-core products (same values)
    cudaStream_t st = nullptr;

    // weights
    uint8_t* wbuf = nullptr;
    size_t wbytes = 0;
    DevMatrix token_embd, output;
    const float* output_norm = nullptr;
    std::vector<DevLayer> layers;

    // state
    uint8_t* sbuf = nullptr;
    size_t sbytes = 0;
    float *x, *xb, *q, *k, *v, *att, *hb, *logits, *rope_cos, *rope_sin, *part_acc, *part_ml;
    ActSlot act[2];
    float* kcache;       // [n_layer][n_head_kv][capacity][head_dim] rotated keys (attention.cuh)
    __half* vcache;      // [n_layer][n_head_kv][capacity][head_dim] values
    double* theta;       // [head_dim / 2] RoPE frequencies
    size_t kv_layer;     // values of K (or V) per layer
    int32_t* dint;       // [META_INTS + 2*max_chunk + capacity]: meta, tokens, chunk_slot, pos_slot
    int32_t* dnext;      // [max_chunk] chosen tokens
    float* arg_v;        // [ARGMAX_SLICES] argmax stage-1 winners (one row at a time)
    int32_t* arg_i;
    int32_t* dout;       // [n_scratch] tokens of the device decode loop
    AttnShape ash;

    // pinned host mirrors
    int32_t* hint = nullptr;   // same layout as dint
    int32_t* hnext = nullptr;  // [1]
    std::vector<int32_t> plan_chunk, plan_pos;  // host-only plans for device-run steps

    cudaGraphExec_t graph = nullptr;
    float graph_temp = 0.0f;
    uint64_t graph_seed = 0;
    bool graph_fuse = true;
    bool graph_pdl = true;

    Impl(const std::string& path, const EngineOptions& o, int dev);
    ~Impl();

    ChunkMeta* meta() const { return reinterpret_cast<ChunkMeta*>(dint); }
    int32_t* d_tokens() const { return dint + META_INTS; }
    int32_t* d_chunk_slot() const { return dint + META_INTS + max_chunk; }
    int32_t* d_pos_slot() const { return dint + META_INTS + 2 * max_chunk; }
    int32_t* h_chunk_slot() const { return hint + META_INTS + max_chunk; }
    int32_t* h_pos_slot() const { return hint + META_INTS + 2 * max_chunk; }

    // engine_init.cu: the constructor's steps, in order
    void upload_weights();  // sizes, allocates and fills wbuf (tied matrices once)
    void alloc_state();     // sizes, allocates and zeroes sbuf
    void upload_rope();     // RoPE frequencies and the cos/sin tables by position
    DevMatrix upload(const Matrix& m, std::map<const uint8_t*, const uint8_t*>& placed, Arena& a, bool copy);
    const float* upload_vec(const float* v, int64_t n, std::map<const uint8_t*, const uint8_t*>& placed, Arena& a,
                            bool copy);
    void upload_plan(const ChunkPlan& plan, const int32_t* tokens);
    Acts prep(const float* xin, int K, int T, int type, int slot);
    Acts norm_prep(const float* xin, const float* w, int T, int type, int slot);
    void forward(int T, int n_chunks, int n_out, float* hidden, int hidden_T, int hidden_t0);
    void copy_logits(float* dst, int rows);
    void capture_decode_graph(float temperature, uint64_t seed);
    void sync() { LG_CUDA_CHECK(cudaStreamSynchronize(st)); }
    // Every public call starts here: this engine's launch options for the kernels it launches.
    void begin() const { launch_opts() = opts; }
};

}  // namespace cuda
}  // namespace lg

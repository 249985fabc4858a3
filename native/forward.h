// One forward pass of a planned chunk of T >= 1 tokens (prefill, verify and decode alike),
// and RunState, every buffer it uses, sized once at init. Knows nothing about policies:
// the KV cache plans where the chunk lands; the engine splits inputs into chunks.
#pragma once
#include <cstddef>
#include <cstdint>
#include <new>

#include "kv_cache.h"
#include "model.h"
#include "ops.h"  // rope_frequencies, fill_rope_row (also used by the CUDA engine)
#include "quant.h"
#include "threadpool.h"

namespace lg {

static constexpr int MAX_HEAD_DIM = 256;  // stack buffer for one rotated query
static constexpr int ATT_TOKENS = 4;      // tokens of a chunk whose queries share each pass over the keys
static constexpr int MAX_GROUP = 16;      // query heads per KV head (GQA group) the attention supports
static constexpr size_t BUF_ALIGN = 64;   // cache line / AVX-512 width

static constexpr int CHUNKS_PER_THREAD = 4;  // pool chunks per thread of the attention and prep tasks

// Chunks of a pool task over `units` work items (rounded up to `align`), at most per_thread per
// thread: a few per thread for uneven work, so a thread the OS runs late just gets fewer.
inline int pool_chunks(const ThreadPool& pool, int64_t units, int64_t align, int per_thread) {
    int64_t n = (units + align - 1) / align, cap = static_cast<int64_t>(pool.size()) * per_thread;
    return static_cast<int>(n < cap ? n : cap);
}

// A heap array aligned to BUF_ALIGN, allocated once.
template <class T>
class Buffer {
public:
    Buffer() = default;
    explicit Buffer(size_t n) : n_(n) {
        p_ = static_cast<T*>(::operator new(n * sizeof(T) + BUF_ALIGN, std::align_val_t(BUF_ALIGN)));
    }
    ~Buffer() { if (p_) ::operator delete(p_, std::align_val_t(BUF_ALIGN)); }
    Buffer(Buffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr; o.n_ = 0; }
    Buffer& operator=(Buffer&& o) noexcept {
        if (this != &o) { this->~Buffer(); p_ = o.p_; n_ = o.n_; o.p_ = nullptr; o.n_ = 0; }
        return *this;
    }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    T* data() const { return p_; }
    size_t size() const { return n_; }
    T& operator[](size_t i) const { return p_[i]; }

private:
    T* p_ = nullptr;
    size_t n_ = 0;
};

// Every buffer a forward pass touches. T below is at most max_chunk.
struct RunState {
    RunState(const Config& c, const Weights& w, int capacity, int max_chunk, int n_threads,
             ActPrecision prec = ActPrecision::Q8X2);
    size_t bytes() const;

    int max_chunk;
    int capacity;
    Buffer<float> x;         // [max_chunk][n_embd] residual stream
    Buffer<float> xb;        // [max_chunk][n_embd] normed input of a matmul
    Buffer<float> q;         // [max_chunk][n_embd] queries, un-rotated
    Buffer<float> k;         // [max_chunk][kv_dim] new keys, un-rotated, without bias
    Buffer<float> v;         // [max_chunk][kv_dim] new values
    Buffer<float> att;       // [max_chunk][n_embd] attention output per head
    Buffer<float> hb;        // [max_chunk][n_ff] gate, then silu(gate) * up
    Buffer<float> hb2;       // [max_chunk][n_ff] up
    ActPrecision prec;       // of every prepared activation (quant.h: one precision per engine)
    Buffer<uint8_t> act[3];  // [act_bytes] prepared activations (one per distinct q/k/v type)
    size_t act_bytes;
    int att_queries;         // ATT_TOKENS * (n_head / n_head_kv): queries of one attention work item
    Buffer<float> scores;    // [n_threads][att_queries][capacity] attention weights of one work item
    Buffer<float> qbuf;      // [n_threads][2][att_queries][head_dim] rotated queries (rotation index, position)
    Buffer<float> rope_cos;  // [capacity][head_dim/2] cos(pos * theta_i), computed in double
    Buffer<float> rope_sin;  // [capacity][head_dim/2]
    Buffer<double> theta;    // [head_dim/2] base^(-2i/head_dim)
    Buffer<float> rot_cos;   // [max_chunk][head_dim/2] cos(rot * theta_i) of the chunk's rotation indices
    Buffer<float> rot_sin;   // [max_chunk][head_dim/2]
    Buffer<int32_t> pos_slot;    // [capacity] cache slot of each position
    Buffer<int32_t> chunk_slot;  // [max_chunk] cache slot of each token of the chunk
};

// Where a chunk's optional outputs go.
struct ChunkOutputs {
    float* logits = nullptr;  // [all_logits ? T : 1][n_vocab], or nullptr for none
    bool all_logits = false;
    float* hidden = nullptr;  // base of [n_layer+1][hidden_T][n_embd]; rows hidden_t0.. written
    int hidden_T = 0;
    int hidden_t0 = 0;
};

// Precondition: plan came from cache.plan_stream/plan_scratch with rs.chunk_slot and
// rs.pos_slot, plan.T <= rs.max_chunk, tokens in [0, n_vocab). Allocates nothing.
void forward_chunk(const Model& model, KVCache& cache, ThreadPool& pool, RunState& rs,
                   const ChunkPlan& plan, const int32_t* tokens, const ChunkOutputs& out);

}  // namespace lg

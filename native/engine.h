// Engine: ties one Model, its KVCache, a ThreadPool and the RunState; splits inputs into
// chunks and validates them. Knows nothing about tokenization, sampling or Python.
#pragma once
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "forward.h"
#include "kv_cache.h"
#include "model.h"
#include "threadpool.h"

namespace lg {

static constexpr int DEFAULT_MAX_CHUNK = 64;  // tokens per forward pass; larger inputs are split

// The cache layout, kv_policy, kv_block and precision have no defaults here: the caller gives them (the
// appliance's come from gateway/settings.py, engine.*); a layout left at 0 is refused by Engine().
struct EngineOptions {
    int n_sink = 0;
    int n_ring = 0;
    int n_scratch = 0;
    EvictPolicy kv_policy = EvictPolicy::SinkRing;
    int n_threads = 0;  // 0 = hardware concurrency
    int max_chunk = DEFAULT_MAX_CHUNK;
    ActPrecision act_precision = ActPrecision::Q8X2;  // quant.h: q8 is faster, q8x2 passes the gate
    // block policies (kv_cache.h): block size (0: none given, refused by a block policy), pooled layer
    // (-1: n_layer / 2), similarity threshold
    int kv_block = 0;
    int sem_layer = -1;
    float sem_threshold = 0.0f;
    float sem_keep = 0.75f;  // policy novelty: the share of blocks important blocks may hold
};

class Engine {
public:
    // Throws (naming the file, key or limit) on a bad model or options; e.g. when
    // n_sink + n_ring + n_scratch exceeds the model's trained context.
    Engine(const std::string& path, const EngineOptions& opt);

    const Config& config() const { return model_.config(); }
    const Model& model() const { return model_; }
    const KVCache& cache() const { return cache_; }
    int n_threads() const { return pool_.size(); }
    int max_chunk() const { return rs_.max_chunk; }
    ActPrecision act_precision() const { return rs_.prec; }
    size_t state_bytes() const { return rs_.bytes(); }

    // Append n tokens to the committed stream (sink, then ring, evicting the oldest).
    // logits: nullptr, [n_vocab] of the last token, or [n][n_vocab] when all_logits.
    // A job may be in flight: the chunks attend to sink + ring only, and the job keeps the view it
    // forked from (kv_cache.h, READING DURING A JOB).
    void prefill_stream(const int32_t* tokens, int n, float* logits, bool all_logits);
    // Append n tokens to scratch (a job); logits as above. Throws if scratch would overflow.
    void forward_scratch(const int32_t* tokens, int n, float* logits, bool all_logits);
    // forward_scratch that also fills hidden [n_layer+1][n][n_embd], then rolls back.
    void forward_hidden(const int32_t* tokens, int n, float* hidden, float* logits);
    void rollback(int n) { cache_.rollback(n); }
    // Policy novelty: importance of the stream tokens prefilled from now on (kv_cache.h).
    void set_stream_importance(float v) {
        if (!(v >= 0.0f)) throw std::invalid_argument("stream importance must be >= 0");
        cache_.set_importance(v);
    }
    uint64_t stream_checksum() const { return cache_.stream_checksum(); }
    // Stream tokens of the running job's view evicted by chunks read during it (0 without a job).
    int64_t job_view_lost() const { return cache_.job_view_lost(); }
    // Whether a job started from now on attends to the ring (kv_cache.h, A JOB WITHOUT THE STREAM).
    void set_job_sees_stream(bool v) { cache_.set_job_sees_stream(v); }
    bool job_sees_stream() const { return cache_.job_sees_stream(); }

private:
    void check_tokens(const int32_t* tokens, int n) const;

    Model model_;
    SemanticSpec sem_;
    KVCache cache_;
    ThreadPool pool_;
    RunState rs_;
};

}  // namespace lg

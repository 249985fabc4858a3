// Engine: model + KV cache + thread pool + run state; input validation and chunking.
// Knows nothing about tokenization, sampling or Python.
#include "engine.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

namespace lg {

static constexpr int MAX_THREADS = 256;
static constexpr int MAX_CHUNK_LIMIT = 4096;

static int pick_threads(int n) {
    if (n <= 0) n = static_cast<int>(std::thread::hardware_concurrency());
    if (n <= 0) n = 1;
    if (n > MAX_THREADS) throw std::invalid_argument("n_threads " + std::to_string(n) + " > " + std::to_string(MAX_THREADS));
    return n;
}

static const Config& checked(const Model& m, const EngineOptions& o, const std::string& path) {
    const Config& c = m.config();
    int64_t cap = static_cast<int64_t>(o.kv_policy == EvictPolicy::Fifo ? 0 : o.n_sink) + o.n_ring + o.n_scratch;
    if (cap > c.n_ctx_train)
        throw std::invalid_argument(path + ": n_sink + n_ring + n_scratch = " + std::to_string(cap) +
                                    " exceeds the model's trained context length " +
                                    std::to_string(c.n_ctx_train) + " (" + c.arch + ".context_length)");
    if (o.max_chunk < 1 || o.max_chunk > MAX_CHUNK_LIMIT)
        throw std::invalid_argument("max_chunk must be in 1.." + std::to_string(MAX_CHUNK_LIMIT));
    if (c.head_dim > MAX_HEAD_DIM || c.head_dim % 4 != 0)
        throw std::invalid_argument(path + ": head_dim " + std::to_string(c.head_dim) +
                                    " unsupported (multiple of 4, at most " + std::to_string(MAX_HEAD_DIM) + ")");
    return c;
}

static SemanticSpec semantic_spec(const Config& c, const EngineOptions& o) {
    SemanticSpec s;
    s.block = o.kv_block;
    s.layer = o.sem_layer < 0 ? c.n_layer / 2 : o.sem_layer;
    s.threshold = o.sem_threshold;
    s.keep = o.sem_keep;
    s.n_embd = c.n_embd;
    s.rope_base = c.rope_theta;
    s.neox = c.rope_style == RopeStyle::Neox;
    return s;
}

Engine::Engine(const std::string& path, const EngineOptions& o)
    : model_(path),
      sem_(semantic_spec(checked(model_, o, path), o)),
      cache_(model_.config().n_layer, model_.config().n_head_kv, model_.config().head_dim,
             o.n_sink, o.n_ring, o.n_scratch, o.kv_policy, &sem_),
      pool_(pick_threads(o.n_threads)),
      rs_(model_.config(), model_.weights(), cache_.capacity(), o.max_chunk, pool_.size(), o.act_precision) {
    // Packed weights where this build has kernels for them (aarch64); LINEGATE_PACK_WEIGHTS=0 or 1 decides by
    // hand (A/B runs; 1 on other targets runs the packed layout through the GGUF kernels, for tests).
    const char* env = std::getenv("LINEGATE_PACK_WEIGHTS");
    const bool pack = env && *env ? std::string(env) != "0" : packed_kernels();
    if (pack) model_.pack_matrices();
}

void Engine::check_tokens(const int32_t* tokens, int n) const {
    if (n < 1) throw std::invalid_argument("need at least one token");
    const int V = config().n_vocab;
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= V)
            throw std::invalid_argument("token " + std::to_string(tokens[i]) + " at index " + std::to_string(i) +
                                        " is outside the vocabulary [0, " + std::to_string(V) + ")");
}

void Engine::prefill_stream(const int32_t* tokens, int n, float* logits, bool all_logits) {
    check_tokens(tokens, n);  // a job may hold scratch: it keeps its view (kv_cache.h, READING DURING A JOB)
    const int V = config().n_vocab;
    for (int done = 0; done < n;) {
        int T = std::min({n - done, rs_.max_chunk, cache_.stream_chunk_limit()});
        ChunkPlan plan = cache_.plan_stream(T, rs_.chunk_slot.data(), rs_.pos_slot.data());
        ChunkOutputs out;
        bool last = done + T == n;
        if (logits && all_logits) {
            out.logits = logits + static_cast<size_t>(done) * V;
            out.all_logits = true;
        } else if (logits && last) {
            out.logits = logits;
        }
        forward_chunk(model_, cache_, pool_, rs_, plan, tokens + done, out);
        done += T;
    }
}

void Engine::forward_scratch(const int32_t* tokens, int n, float* logits, bool all_logits) {
    check_tokens(tokens, n);
    if (n > cache_.scratch_free())
        throw std::length_error("forward_scratch of " + std::to_string(n) + " tokens: scratch has " +
                                std::to_string(cache_.scratch_free()) + " of n_scratch = " +
                                std::to_string(cache_.n_scratch()) + " slots free");
    const int V = config().n_vocab;
    for (int done = 0; done < n;) {
        int T = std::min(n - done, rs_.max_chunk);
        ChunkPlan plan = cache_.plan_scratch(T, rs_.chunk_slot.data(), rs_.pos_slot.data());
        ChunkOutputs out;
        if (logits && all_logits) {
            out.logits = logits + static_cast<size_t>(done) * V;
            out.all_logits = true;
        } else if (logits && done + T == n) {
            out.logits = logits;
        }
        forward_chunk(model_, cache_, pool_, rs_, plan, tokens + done, out);
        done += T;
    }
}

void Engine::forward_hidden(const int32_t* tokens, int n, float* hidden, float* logits) {
    check_tokens(tokens, n);
    if (n > cache_.scratch_free())
        throw std::length_error("forward_hidden of " + std::to_string(n) + " tokens: scratch has " +
                                std::to_string(cache_.scratch_free()) + " slots free");
    const int start = cache_.scratch_used();
    const int V = config().n_vocab;
    for (int done = 0; done < n;) {
        int T = std::min(n - done, rs_.max_chunk);
        ChunkPlan plan = cache_.plan_scratch(T, rs_.chunk_slot.data(), rs_.pos_slot.data());
        ChunkOutputs out;
        out.logits = logits ? logits + static_cast<size_t>(done) * V : nullptr;
        out.all_logits = true;
        out.hidden = hidden;
        out.hidden_T = n;
        out.hidden_t0 = done;
        forward_chunk(model_, cache_, pool_, rs_, plan, tokens + done, out);
        done += T;
    }
    cache_.rollback(start);
}

}  // namespace lg

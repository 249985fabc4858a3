// The `semantic` eviction policy of KVCache (rules in kv_cache.h): blocks, their pooled hidden-state
// embeddings, the choice of the block to evict, and the in-place re-rotation that keeps the kept
// blocks a consecutive window. Everything is sized in init_semantic; nothing allocates afterwards.
#include <cassert>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kv_cache.h"
#include "ops.h"

namespace lg {

void KVCache::init_semantic(const SemanticSpec* sem) {
    if (!sem)
        throw std::invalid_argument(std::string("KV cache policy '") + policy_name(policy_) +
                                    "' needs the CPU engine (not available on this backend)");
    sem_ = *sem;
    const int C = sem_.block;
    if (C < 1 || n_ring_ % C != 0 || n_ring_ / C < 2)
        throw std::invalid_argument(std::string("policy '") + policy_name(policy_) + "': n_ring (" + std::to_string(n_ring_) +
                                    ") must be a multiple of the block size (" + std::to_string(C) +
                                    ") and hold at least 2 blocks");
    if (policy_ == EvictPolicy::Semantic && (sem_.n_embd < 1 || sem_.layer < 0 || sem_.layer > n_layer_))
        throw std::invalid_argument("policy 'semantic': embedding layer " + std::to_string(sem_.layer) +
                                    " outside 0.." + std::to_string(n_layer_));
    if (!(sem_.threshold >= -1.0f && sem_.threshold <= 1.0f))  // also rejects NaN
        throw std::invalid_argument("policy 'semantic': threshold must be a cosine in [-1, 1]");
    if (!(sem_.keep >= 0.0f && sem_.keep <= 1.0f))
        throw std::invalid_argument("policy 'novelty': keep must be a share in [0, 1]");
    n_blocks_ = n_ring_ / C;
    order_.reset(new int[n_blocks_]());
    free_.reset(new int[n_blocks_]());
    fill_.reset(new int[n_blocks_]());
    src_.reset(new int64_t[n_blocks_]());
    const int E = policy_ == EvictPolicy::Semantic ? sem_.n_embd : 0;  // novelty needs no embeddings
    sem_.n_embd = E;
    emb_.reset(new float[static_cast<size_t>(n_blocks_) * E + 1]());
    imp_.reset(new float[n_blocks_]());
    n_free_ = n_blocks_;
    for (int i = 0; i < n_blocks_; i++) free_[i] = n_blocks_ - 1 - i;  // block 0 is taken first
    const int half = head_dim_ / 2;
    shift_rot_.reset(new float[4 * static_cast<size_t>(half)]());
    std::unique_ptr<double[]> theta(new double[half]);
    rope_frequencies(sem_.rope_base, head_dim_, theta.get());
    fill_rope_row(theta.get(), head_dim_, C, shift_rot_.get(), shift_rot_.get() + half);
    fill_rope_row(theta.get(), head_dim_, -C, shift_rot_.get() + 2 * half, shift_rot_.get() + 3 * half);
}

void KVCache::plan_semantic(int T, int32_t* chunk_slot) {
    const int C = sem_.block;
    const int room = n_order_ > 0 ? C - fill_[order_[n_order_ - 1]] : 0;
    const int need = T > room ? (T - room + C - 1) / C : 0;  // new blocks this chunk opens
    if (need > n_free_) {
        const auto t0 = std::chrono::steady_clock::now();
        while (need > n_free_) evict_block();
        ev_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    for (int t = 0; t < T; t++) {
        if (n_order_ == 0 || fill_[order_[n_order_ - 1]] == C) {
            assert(n_free_ > 0);
            const int b = free_[--n_free_];
            fill_[b] = 0;
            src_[b] = stream_total_ + t;
            imp_[b] = 0.0f;
            std::memset(emb_.get() + static_cast<size_t>(b) * sem_.n_embd, 0, sizeof(float) * sem_.n_embd);
            order_[n_order_++] = b;
        }
        const int b = order_[n_order_ - 1];
        chunk_slot[t] = n_sink_ + b * C + fill_[b]++;
        if (importance_ > imp_[b]) imp_[b] = importance_;
    }
    ring_used_ += T;
}

// Cosine of two blocks' embedding sums, in double.
static double cosine(const float* a, const float* b, int n) {
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < n; i++) {
        ab += static_cast<double>(a[i]) * b[i];
        aa += static_cast<double>(a[i]) * a[i];
        bb += static_cast<double>(b[i]) * b[i];
    }
    return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0;
}

int KVCache::choose_similar(int m) {
    const int E = sem_.n_embd;
    double best = -2.0;
    int best_i = -1;
    for (int i = 0; i + 1 < m; i++) {
        const double s = cosine(emb_.get() + static_cast<size_t>(order_[i]) * E,
                                emb_.get() + static_cast<size_t>(order_[i + 1]) * E, E);
        if (s > best) best = s, best_i = i;
    }
    if (best_i >= 0 && best >= sem_.threshold) {
        ev_.similar++;
        return best_i;
    }
    ev_.oldest++;
    return 0;
}

int KVCache::choose_novelty(int m) {
    // Over the share, the least important block goes (the oldest of equals): repeats graded lower
    // give way before the first line of a kind.
    int n_imp = 0, least_imp = -1, first_plain = -1;
    for (int i = 0; i < n_order_; i++) {  // the share counts every listed block
        const float v = imp_[order_[i]];
        n_imp += v > 0.0f;
        if (i < m && v > 0.0f && (least_imp < 0 || v < imp_[order_[least_imp]])) least_imp = i;
        if (i < m && v <= 0.0f && first_plain < 0) first_plain = i;
    }
    if (least_imp >= 0 && (first_plain < 0 || n_imp > sem_.keep * n_blocks_)) {
        ev_.important++;
        return least_imp;
    }
    ev_.oldest++;
    return first_plain >= 0 ? first_plain : 0;
}

void KVCache::evict_block() {
    const int C = sem_.block;
    // Candidates: listed blocks whose embedding is complete (a partly filled newest block is not).
    const int m = n_order_ > 0 && fill_[order_[n_order_ - 1]] < C ? n_order_ - 1 : n_order_;
    assert(m >= 1);
    const int j = policy_ == EvictPolicy::Novelty ? choose_novelty(m) : choose_similar(m);
    // Close the gap on the side with fewer keys: older blocks move forward by C, or newer blocks
    // (and the next rotation index) back by C.
    const int newer_tokens = ring_used_ - (j + 1) * C;
    if (view_active_) follow_view(j, j * C <= newer_tokens);  // a running job's scratch keeps its place
    if (j * C <= newer_tokens) {
        shift_keys(0, j, true);
    } else {
        shift_keys(j + 1, n_order_, false);
        rot_next_ -= C;
    }
    free_[n_free_++] = order_[j];
    std::memmove(order_.get() + j, order_.get() + j + 1, sizeof(int) * (n_order_ - 1 - j));
    n_order_--;
    ring_used_ -= C;
}

void KVCache::shift_keys(int first, int last, bool forward) {
    const int C = sem_.block, half = head_dim_ / 2;
    const float* c = shift_rot_.get() + (forward ? 0 : 2 * half);
    const float* s = c + half;
    for (int i = first; i < last; i++) {
        const int b = order_[i], n = fill_[b];
        ev_.shifted_keys += n;
        for (int l = 0; l < n_layer_; l++)
            for (int h = 0; h < n_head_kv_; h++) {
                float* kb = k(l, h) + static_cast<size_t>(n_sink_ + b * C) * head_dim_;
                for (int t = 0; t < n; t++, kb += head_dim_) rope(kb, kb, c, s, head_dim_, sem_.neox);
            }
    }
}

void KVCache::add_embedding(const ChunkPlan& plan, const int32_t* chunk_slot, const float* x) {
    if (policy_ != EvictPolicy::Semantic || !plan.stream) return;
    const int C = sem_.block, E = sem_.n_embd;
    for (int t = 0; t < plan.T; t++) {  // token order: the sums do not depend on the chunking
        const int slot = chunk_slot[t];
        if (slot < n_sink_) continue;
        float* e = emb_.get() + static_cast<size_t>((slot - n_sink_) / C) * E;
        const float* xt = x + static_cast<size_t>(t) * E;
        for (int i = 0; i < E; i++) e[i] += xt[i];
    }
}

}  // namespace lg

// The sink + ring + scratch KV cache bookkeeping (layout and position rules in kv_cache.h).
// Knows nothing about attention math.
#include "kv_cache.h"

#include <cassert>
#include <cstring>
#include <stdexcept>

namespace lg {

EvictPolicy parse_policy(const std::string& name) {
    if (name == "sink_ring") return EvictPolicy::SinkRing;
    if (name == "fifo") return EvictPolicy::Fifo;
    if (name == "semantic") return EvictPolicy::Semantic;
    if (name == "novelty") return EvictPolicy::Novelty;
    throw std::invalid_argument("unknown KV cache policy '" + name + "' (sink_ring, fifo, semantic, novelty)");
}

const char* policy_name(EvictPolicy p) {
    switch (p) {
        case EvictPolicy::Fifo: return "fifo";
        case EvictPolicy::Semantic: return "semantic";
        case EvictPolicy::Novelty: return "novelty";
        default: return "sink_ring";
    }
}

KVCache::KVCache(int n_layer, int n_head_kv, int head_dim, int n_sink, int n_ring, int n_scratch,
                 EvictPolicy policy, const SemanticSpec* sem)
    : n_layer_(n_layer), n_head_kv_(n_head_kv), head_dim_(head_dim),
      n_sink_(policy == EvictPolicy::Fifo ? 0 : n_sink), n_ring_(n_ring), n_scratch_(n_scratch),
      policy_(policy) {
    if (n_sink < 0 || n_ring < 1 || n_scratch < 1)
        throw std::invalid_argument("KV cache needs n_sink >= 0, n_ring >= 1, n_scratch >= 1 (got " +
                                    std::to_string(n_sink) + ", " + std::to_string(n_ring) + ", " +
                                    std::to_string(n_scratch) + ")");
    head_stride_ = static_cast<size_t>(capacity()) * head_dim_;
    n_values_ = static_cast<size_t>(n_layer_) * n_head_kv_ * head_stride_;
    // Zero-filled: every page is touched now, so RSS does not grow as the ring fills, and
    // the checksum of an empty cache is defined.
    kdata_.reset(new float[n_values_]());
    vdata_.reset(new uint16_t[n_values_]());
    view_slot_.reset(new int32_t[capacity()]());
    view_src_.reset(new int64_t[capacity()]());
    slot_src_.reset(new int64_t[capacity()]());
    if (blocked()) init_semantic(sem);
}

int KVCache::stream_chunk_limit() const {
    if (sink_used_ < n_sink_) return n_sink_ - sink_used_;
    // semantic: one block stays (the newest may be partly filled); the rest can be freed
    return blocked() ? n_ring_ - sem_.block : n_ring_;
}

int KVCache::ring_slot(int i) const {
    if (blocked())  // every listed block but the newest is full
        return n_sink_ + order_[i / sem_.block] * sem_.block + i % sem_.block;
    return n_sink_ + (ring_start_ + i) % n_ring_;
}

void KVCache::kept_stream_index(int64_t* out) const {
    int p = 0;
    for (int i = 0; i < sink_used_; i++) out[p++] = i;
    for (int i = 0; i < ring_used_; i++)
        out[p++] = blocked() ? src_[order_[i / sem_.block]] + i % sem_.block
                                                    : stream_total_ - ring_used_ + i;
}

void KVCache::fill_pos_slot(int32_t* pos_slot) const {
    int p = 0;
    for (int i = 0; i < sink_used_; i++) pos_slot[p++] = i;
    for (int i = 0; i < ring_used_; i++) pos_slot[p++] = ring_slot(i);
    for (int i = 0; i < scratch_used_; i++) pos_slot[p++] = n_sink_ + n_ring_ + i;
}

ChunkPlan KVCache::plan_stream(int T, int32_t* chunk_slot, int32_t* pos_slot) {
    assert(T >= 1 && T <= stream_chunk_limit());
    if (sink_used_ < n_sink_) {
        for (int t = 0; t < T; t++) chunk_slot[t] = sink_used_ + t;
        sink_used_ += T;
    } else if (blocked()) {
        plan_semantic(T, chunk_slot);
    } else {
        int evict = ring_used_ + T - n_ring_;
        if (evict > 0) {
            ring_start_ = (ring_start_ + evict) % n_ring_;
            ring_used_ -= evict;
        }
        for (int t = 0; t < T; t++) chunk_slot[t] = n_sink_ + (ring_start_ + ring_used_ + t) % n_ring_;
        ring_used_ += T;
    }
    ChunkPlan plan;
    plan.rot0 = rot_next_;
    plan.stream = true;
    rot_next_ += T;
    stream_total_ += T;
    fill_pos_slot(pos_slot);  // (scratch follows the stream's positions: a stream chunk never reads it)
    plan.n_sink_pos = sink_used_;
    plan.T = T;
    plan.n_pos = stream_len();
    plan.pos0 = plan.n_pos - T;
    if (view_active_) refresh_view();
    return plan;
}

ChunkPlan KVCache::plan_scratch(int T, int32_t* chunk_slot, int32_t* pos_slot) {
    assert(T >= 1 && T <= scratch_free());
    if (scratch_used_ == 0) begin_view();
    for (int t = 0; t < T; t++) chunk_slot[t] = n_sink_ + n_ring_ + scratch_used_ + t;
    ChunkPlan plan;
    plan.rot0 = view_rot_ + scratch_used_;
    scratch_used_ += T;
    // the job's view (without stream writes since it began: the stream's own order), then scratch
    std::memcpy(pos_slot, view_slot_.get(), sizeof(int32_t) * view_len_);
    for (int i = 0; i < scratch_used_; i++) pos_slot[view_len_ + i] = n_sink_ + n_ring_ + i;
    plan.n_sink_pos = view_sink_;
    plan.T = T;
    plan.n_pos = view_len_ + scratch_used_;
    plan.pos0 = plan.n_pos - T;
    return plan;
}

void KVCache::rollback(int n) {
    if (n < 0 || n > scratch_used_)
        throw std::invalid_argument("rollback(" + std::to_string(n) + "): scratch holds " +
                                    std::to_string(scratch_used_) + " tokens");
    scratch_used_ = n;
    if (n == 0) view_active_ = false;
}

void StreamHash::mix_bytes(const void* p, size_t nbytes) {
    for (size_t i = 0; i + 8 <= nbytes; i += 8) {
        uint64_t w;
        std::memcpy(&w, static_cast<const char*>(p) + i, 8);
        mix(w);
    }
}

uint64_t KVCache::stream_checksum() const {
    // StreamHash over the used slots' K and V rows (head_dim a multiple of 4).
    StreamHash hash;
    hash.mix(static_cast<uint64_t>(sink_used_));
    hash.mix(static_cast<uint64_t>(ring_used_));
    hash.mix(static_cast<uint64_t>(ring_start_));
    hash.mix(static_cast<uint64_t>(stream_total_));
    if (blocked()) {  // block order and rotation base (the others: implied)
        hash.mix(static_cast<uint64_t>(rot_next_));
        for (int i = 0; i < n_order_; i++) hash.mix(static_cast<uint64_t>(order_[i]));
    }
    for (int l = 0; l < n_layer_; l++)
        for (int hd = 0; hd < n_head_kv_; hd++) {
            const size_t base = (static_cast<size_t>(l) * n_head_kv_ + hd) * head_stride_;
            auto slot_hash = [&](int slot) {
                const size_t off = base + static_cast<size_t>(slot) * head_dim_;
                hash.mix_bytes(kdata_.get() + off, head_dim_ * sizeof(float));
                hash.mix_bytes(vdata_.get() + off, head_dim_ * sizeof(uint16_t));
            };
            for (int s = 0; s < sink_used_; s++) slot_hash(s);
            for (int i = 0; i < ring_used_; i++) slot_hash(ring_slot(i));
        }
    return hash.h;
}

}  // namespace lg

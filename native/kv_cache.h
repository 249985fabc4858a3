// The sink + ring + scratch KV cache: one allocation at init, slot bookkeeping, rollback,
// checksum. Knows nothing about attention math or weights; forward.cpp reads and writes slots.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace lg {

// Layout: per layer, per KV head, n_sink + n_ring + n_scratch slots of head_dim values: keys in fp32,
// already rotated (below), values in fp16 ([n_layer][n_head_kv][capacity][head_dim] each).
//
//   slots:  | sink: 0..n_sink-1 | ring: n_sink..n_sink+n_ring-1 | scratch: ...+n_scratch-1 |
//
// POSITIONS (StreamingLLM, Xiao et al. 2023). Attention sees positions INSIDE the cache: the sink holds
// positions 0..sink_used-1, ring entries the next ones in age order (oldest first), then scratch, so
// the largest position ever used is capacity-1 however long the stream runs (the engine checks
// capacity <= n_ctx_train at init).
// ROTATION, once per key. RoPE scores depend only on the distance between query and key positions.
// Ring and scratch tokens are consecutive in the stream, so their distances in the cache equal their
// distances in stream order: each key is rotated ONCE, when written, by its ROTATION INDEX (its index
// in the stream: stream_total before it; scratch continues after the stream), and a query is rotated by
// its own rotation index for them. Sink keys have rotation index = position (0..n_sink-1, the stream's
// first tokens), so a query is rotated a second time, by its cache position, for the sink keys only.
// Angles are computed in double per token (ChunkPlan::rot0) and rounded to float, so nothing loses
// precision as the stream ages, and nothing is re-rotated in place (no K-shift drift). Keys are kept
// in fp32: qwen2's key biases reach |354|, where fp16 would lose the token-dependent part.
//
// STREAM WRITES (prefill_stream): scratch must be empty. The sink fills first and is never
// evicted. Once the ring is full, a chunk of T tokens FIRST evicts the T oldest ring entries,
// then the chunk is written and attends to what remains (sink + newer ring + itself). Policy
// `fifo` is the same with n_sink = 0 (the StreamingLLM baseline that collapses).
//
// SEMANTIC (policy `semantic`, CPU engine): the ring is kept in blocks of C tokens (slots n_sink +
// b*C ..), listed oldest first; each block's embedding is the sum of one layer's hidden states over
// its tokens (the forward adds them: add_embedding). When the stream needs a block and none is free,
// the adjacent pair of full blocks with the largest cosine goes (its older block) if that cosine is
// >= threshold, else the oldest block. Removing a block from the middle leaves a gap in rotation
// indices; the smaller side is re-rotated in place by +-C (one fp32 rounding per key and shift, angles
// in double) so ring + scratch stay consecutive: attention sees the kept blocks as one window.
//
// NOVELTY (policy `novelty`): the same blocks, scored by the caller instead of by hidden states: each
// block keeps the largest set_importance() value current while its tokens were planned (the appliance:
// 1 for a line whose template the triage has rarely seen or whose severity is high). A block with
// importance > 0 is kept while such blocks hold at most keep * n_blocks; the oldest unimportant block
// goes first; over that share, the least important one (the oldest of equals). Gaps are closed as for
// `semantic`.
//
// JOBS: a job forks from the stream by writing scratch (positions continue after the ring);
// rollback(n) truncates scratch to n tokens. Sink and ring bytes are never touched by a job,
// so they are bit-identical before and after it (stream_checksum() proves it in tests).
//
// READING DURING A JOB (kv_view.cpp, issue 42): the stream may be written while scratch holds a job.
// A stream chunk attends to sink + ring only (its positions end before scratch). The job keeps the VIEW
// it forked from: the first scratch write records the stream's position -> slot list, sink count and
// rotation base; every scratch write attends to that list + scratch, never to stream entries written
// after the job started. While the ring evicts none of the view's entries, the job's logits are
// bit-identical to a run without the interleaved chunks. An entry the ring evicts leaves the view (it
// is gone; job_view_lost() counts them) and the view closes up: the job then sees a smaller window, as a
// later job would (its sink distances shrink as the stream's do). Block policies re-rotate kept blocks
// to close a gap; the scratch keys and the view's rotation base move with the view's newest surviving
// block, so the distances from the job's tokens to its most recent context never change (one fp32
// rounding per moved key, as for the ring's). rollback(0) ends the view. The CUDA engine does not read
// during jobs (its prefill_stream refuses while scratch is in use).
// A JOB WITHOUT THE STREAM (set_job_sees_stream(false), read at a job's first scratch write): the view
// holds the sink only; scratch follows it by position, its keys rotated from rot_next_ as always. Such a
// job's logits do not depend on what the ring holds (bit for bit), it attends to sink + scratch only, and
// the ring may evict anything while it runs (job_view_lost stays 0).
enum class EvictPolicy { SinkRing, Fifo, Semantic, Novelty };

// What the semantic policy needs beyond the layout: block size, the layer whose hidden state is
// pooled, the similarity threshold and the model's RoPE (to re-rotate kept keys).
struct SemanticSpec {
    int block = 0;           // C: tokens per block (the caller's); n_ring must be a multiple, >= 2 blocks
    int layer = -1;          // hidden state after this many layers (0 = embeddings .. n_layer)
    float threshold = 0.0f;  // evict the most similar pair's older block when cos >= threshold
    float keep = 0.75f;      // novelty: the share of blocks important blocks may hold
    int n_embd = 0;
    double rope_base = 10000.0;
    bool neox = false;
};

// FNV-1a-style mixing over 64-bit words: the stream checksum of the CPU and CUDA caches.
struct StreamHash {
    uint64_t h = 0xcbf29ce484222325ull;
    void mix(uint64_t w) {
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    void mix_bytes(const void* p, size_t nbytes);  // whole 8-byte words
};

EvictPolicy parse_policy(const std::string& name);  // "sink_ring" | "fifo" | "semantic" | "novelty"; throws
const char* policy_name(EvictPolicy p);

// Where one planned chunk lands: slots of its T tokens and its position range.
struct ChunkPlan {
    int T = 0;
    int pos0 = 0;   // position of the chunk's first token
    int n_pos = 0;  // positions after the write (= pos0 + T); token t attends to 0..pos0+t
    int n_sink_pos = 0;  // positions 0..n_sink_pos-1 are sink keys (rotated by their position)
    int64_t rot0 = 0;    // rotation index of the chunk's first token (+t for token t)
    bool stream = false;  // planned by plan_stream (the forward then feeds add_embedding)
};

// Counters of the semantic policy (all zero for the others).
struct EvictStats {
    int64_t similar = 0;        // blocks evicted as the older of the most similar pair
    int64_t oldest = 0;         // blocks evicted as the oldest (semantic: no pair reached the threshold;
                                // novelty: the oldest unimportant block)
    int64_t important = 0;      // novelty: important blocks evicted (over the keep share)
    int64_t shifted_keys = 0;   // token keys re-rotated (per layer and KV head counted once)
    double seconds = 0.0;       // time spent choosing and compacting
};

class KVCache {
public:
    KVCache(int n_layer, int n_head_kv, int head_dim, int n_sink, int n_ring, int n_scratch,
            EvictPolicy policy, const SemanticSpec* sem = nullptr);  // sem: required for Semantic

    int capacity() const { return n_sink_ + n_ring_ + n_scratch_; }
    int n_sink() const { return n_sink_; }
    int n_ring() const { return n_ring_; }
    int n_scratch() const { return n_scratch_; }
    EvictPolicy policy() const { return policy_; }
    int sink_used() const { return sink_used_; }
    int ring_used() const { return ring_used_; }
    int scratch_used() const { return scratch_used_; }
    int stream_len() const { return sink_used_ + ring_used_; }
    int64_t stream_total() const { return stream_total_; }
    size_t bytes() const { return n_values_ * (sizeof(float) + sizeof(uint16_t)); }

    // [capacity][head_dim] rotated fp32 keys / fp16 value bits of layer l, KV head h.
    float* k(int l, int h) { return kdata_.get() + (static_cast<size_t>(l) * n_head_kv_ + h) * head_stride_; }
    uint16_t* v(int l, int h) { return vdata_.get() + (static_cast<size_t>(l) * n_head_kv_ + h) * head_stride_; }

    // Largest stream chunk accepted next: stays inside the sink, or at most n_ring.
    int stream_chunk_limit() const;
    int scratch_free() const { return n_scratch_ - scratch_used_; }

    // Plan a write: updates the bookkeeping (evicting for the stream) and fills
    // chunk_slot[0..T) and pos_slot[0..n_pos). Preconditions asserted: T >= 1,
    // T <= stream_chunk_limit() and scratch empty (stream) / T <= scratch_free() (scratch).
    ChunkPlan plan_stream(int T, int32_t* chunk_slot, int32_t* pos_slot);
    ChunkPlan plan_scratch(int T, int32_t* chunk_slot, int32_t* pos_slot);

    // Semantic only: the layer whose hidden state is pooled (-1 for other policies), and the sum of
    // the chunk's hidden rows x[T][n_embd] into their blocks (tokens in the sink are skipped).
    int embed_layer() const { return policy_ == EvictPolicy::Semantic ? sem_.layer : -1; }
    void add_embedding(const ChunkPlan& plan, const int32_t* chunk_slot, const float* x);
    const EvictStats& evict_stats() const { return ev_; }
    // Novelty: the importance of the stream tokens planned from now on (>= 0; kept in the block as its max).
    void set_importance(float v) { importance_ = v; }
    bool blocked() const { return policy_ == EvictPolicy::Semantic || policy_ == EvictPolicy::Novelty; }
    // Stream index of the token at each stream position (sink, then ring oldest first): out[stream_len()].
    void kept_stream_index(int64_t* out) const;

    void rollback(int n);  // scratch_used = n; precondition 0 <= n <= scratch_used; n = 0 ends the job's view
    // Stream tokens of the running job's view that the ring evicted since the job began (0 without a job).
    int64_t job_view_lost() const { return view_active_ ? view_lost_ : 0; }
    bool job_active() const { return view_active_; }
    // Whether the next job's view holds the ring (true) or the sink only (false): see A JOB WITHOUT THE STREAM.
    void set_job_sees_stream(bool v) { job_sees_stream_ = v; }
    bool job_sees_stream() const { return job_sees_stream_; }
    // 64-bit hash of sink+ring K/V bytes (used slots) and the stream bookkeeping.
    uint64_t stream_checksum() const;

private:
    void fill_pos_slot(int32_t* pos_slot) const;
    int ring_slot(int i) const;  // slot of the i-th oldest ring entry
    void init_semantic(const SemanticSpec* sem);
    void plan_semantic(int T, int32_t* chunk_slot);
    void evict_block();
    int choose_similar(int m);   // order index of the block to evict among the m candidates
    int choose_novelty(int m);
    void shift_keys(int first, int last, bool forward);  // re-rotate order_[first..last) by +-C
    void begin_view();                    // the job's view of the stream, at its first scratch write
    void refresh_view();                  // after a stream write during a job: drop evicted entries
    void follow_view(int j, bool older);  // an evicted block j, closed from the older side or not
    void shift_scratch(bool forward);     // re-rotate the scratch keys by +-C

    int n_layer_, n_head_kv_, head_dim_;
    int n_sink_, n_ring_, n_scratch_;
    EvictPolicy policy_;
    size_t head_stride_;  // values per (layer, head) of K, and of V: capacity * head_dim
    size_t n_values_;     // of K, and of V
    std::unique_ptr<float[]> kdata_;
    std::unique_ptr<uint16_t[]> vdata_;
    int sink_used_ = 0, ring_used_ = 0, ring_start_ = 0, scratch_used_ = 0;
    int64_t stream_total_ = 0;
    int64_t rot_next_ = 0;  // rotation index of the next stream token (= stream_total_ but for semantic)
    // semantic state (sized at init, empty for the other policies)
    SemanticSpec sem_;
    int n_blocks_ = 0, n_order_ = 0, n_free_ = 0;
    std::unique_ptr<int[]> order_, free_, fill_;
    std::unique_ptr<int64_t[]> src_;        // stream index of each block's first token
    std::unique_ptr<float[]> emb_;          // [n_blocks][n_embd] hidden-state sums
    std::unique_ptr<float[]> imp_;          // novelty: each block's importance
    float importance_ = 0.0f;
    std::unique_ptr<float[]> shift_rot_;    // cos, sin of +C, cos, sin of -C: [4][head_dim/2]
    EvictStats ev_;
    // the running job's view (kv_view.cpp): position -> slot and stream index of each entry, [capacity]
    std::unique_ptr<int32_t[]> view_slot_;
    std::unique_ptr<int64_t[]> view_src_, slot_src_;  // slot_src_: refresh_view's stream index per slot
    int view_len_ = 0, view_sink_ = 0;
    int view_anchor_ = -1;        // block policies: the view's newest block (scratch follows it), -1: none
    int64_t view_rot_ = 0;        // rotation index of the job's first scratch token
    int64_t view_lost_ = 0;
    bool view_active_ = false;
    bool job_sees_stream_ = true;
};

}  // namespace lg

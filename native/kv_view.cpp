// The running job's view of the stream (rules in kv_cache.h, READING DURING A JOB): recorded at the
// job's first scratch write, thinned as the ring evicts its entries, and kept one consecutive window
// when a block policy re-rotates kept blocks. Everything is sized at init; nothing allocates here.
#include <cassert>

#include "kv_cache.h"
#include "ops.h"

namespace lg {

void KVCache::begin_view() {
    fill_pos_slot(view_slot_.get());  // scratch is empty: the stream's positions only
    kept_stream_index(view_src_.get());
    view_len_ = stream_len();
    view_sink_ = sink_used_;
    view_rot_ = rot_next_;
    view_anchor_ = blocked() && n_order_ > 0 ? order_[n_order_ - 1] : -1;
    if (!job_sees_stream_) {  // the sink only: sink positions come first in fill_pos_slot's order
        view_len_ = sink_used_;
        view_anchor_ = -1;
    }
    view_lost_ = 0;
    view_active_ = true;
}

void KVCache::refresh_view() {
    // The stream index each ring slot holds now (-1: free); a view entry stays while its slot holds
    // the token it held when the job began. Sink entries are never evicted.
    for (int s = n_sink_; s < n_sink_ + n_ring_; s++) slot_src_[s] = -1;
    for (int i = 0; i < ring_used_; i++)
        slot_src_[ring_slot(i)] = blocked() ? src_[order_[i / sem_.block]] + i % sem_.block
                                            : stream_total_ - ring_used_ + i;
    int w = view_sink_;
    for (int p = view_sink_; p < view_len_; p++) {
        if (slot_src_[view_slot_[p]] != view_src_[p]) continue;
        view_slot_[w] = view_slot_[p];
        view_src_[w] = view_src_[p];
        w++;
    }
    view_lost_ += view_len_ - w;
    view_len_ = w;
}

void KVCache::follow_view(int j, bool older) {
    // Scratch moves with the view's newest surviving block (the anchor, or the block before it when
    // j is the anchor): the distances from the job's tokens to its most recent context never change.
    // Blocks before the anchor are all the view's (later blocks are appended after it).
    if (view_anchor_ < 0) return;  // no ring block in the view: sink distances go by position
    int a = 0;
    while (a < n_order_ && order_[a] != view_anchor_) a++;
    assert(a < n_order_);
    if (older && a <= j) {  // blocks [0, j) move by +C
        shift_scratch(true);
        view_rot_ += sem_.block;
    } else if (!older && a > j) {  // blocks (j, end) move by -C
        shift_scratch(false);
        view_rot_ -= sem_.block;
    }
    if (a == j) view_anchor_ = j > 0 ? order_[j - 1] : -1;
}

void KVCache::shift_scratch(bool forward) {
    const int half = head_dim_ / 2;
    const float* c = shift_rot_.get() + (forward ? 0 : 2 * half);
    const float* s = c + half;
    ev_.shifted_keys += scratch_used_;
    for (int l = 0; l < n_layer_; l++)
        for (int h = 0; h < n_head_kv_; h++) {
            float* kb = k(l, h) + static_cast<size_t>(n_sink_ + n_ring_) * head_dim_;
            for (int t = 0; t < scratch_used_; t++, kb += head_dim_) rope(kb, kb, c, s, head_dim_, sem_.neox);
        }
}

}  // namespace lg

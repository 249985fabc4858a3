// Persistent worker pool: generation-tagged dynamic chunk claiming, spin-then-sleep workers.
// Knows nothing about the work it runs.
#include "threadpool.h"

#include <cassert>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define LG_PAUSE() _mm_pause()
#elif defined(__aarch64__)
#define LG_PAUSE() __asm__ __volatile__("yield")
#else
#define LG_PAUSE() ((void)0)
#endif

namespace lg {

// Pauses a worker spins before it sleeps: bridges the gaps between the dispatches of one
// forward pass (microseconds) without burning a shared core for long between requests.
static constexpr int SPIN_ITERS = 1 << 14;
// Pauses the caller spins on the last chunks before yielding its core to whoever runs them.
static constexpr int WAIT_SPINS = 1 << 10;

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
    workers_.reserve(n_threads_ - 1);
    for (int t = 1; t < n_threads_; t++) workers_.emplace_back(&ThreadPool::worker_loop, this, t);
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        stop_.store(true);
        generation_.fetch_add(1);
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
}

void ThreadPool::work(uint32_t gen, int tid) {
    for (;;) {
        // The word holds the bound too: a stale worker never compares against a newer task.
        uint64_t c = claim_.load(std::memory_order_acquire);
        if (static_cast<uint32_t>(c >> 32) != gen) return;
        const int n = static_cast<int>((c >> 16) & 0xffffu), chunk = static_cast<int>(c & 0xffffu);
        if (chunk >= n) return;
        if (!claim_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel)) continue;
        // The task cannot complete (and task_/ctx_ cannot change) until this chunk is done.
        task_(ctx_, tid, chunk, n);
        done_.fetch_add(1, std::memory_order_acq_rel);
    }
}

void ThreadPool::dispatch(TaskFn fn, void* ctx, int n_chunks) {
    if (n_chunks <= 0) return;
    assert(n_chunks <= MAX_CHUNKS);
    if (n_threads_ == 1 || n_chunks == 1) {
        for (int i = 0; i < n_chunks; i++) fn(ctx, 0, i, n_chunks);
        return;
    }
    const uint32_t gen = generation_.load(std::memory_order_relaxed) + 1;
    task_ = fn;
    ctx_ = ctx;
    done_.store(0, std::memory_order_relaxed);
    claim_.store(static_cast<uint64_t>(gen) << 32 | static_cast<uint64_t>(n_chunks) << 16,
                 std::memory_order_release);
    {
        // Publishing under the mutex closes the race with a worker about to sleep.
        std::lock_guard<std::mutex> lk(mu_);
        generation_.store(gen, std::memory_order_release);
    }
    if (sleepers_.load(std::memory_order_acquire) > 0) cv_.notify_all();
    work(gen, 0);
    int spins = 0;
    while (done_.load(std::memory_order_acquire) < n_chunks) {
        if (++spins < WAIT_SPINS) LG_PAUSE();
        else std::this_thread::yield();
    }
}

void ThreadPool::worker_loop(int tid) {
    uint32_t seen = 0;
    for (;;) {
        int spins = 0;
        uint32_t g;
        while ((g = generation_.load(std::memory_order_acquire)) == seen && spins < SPIN_ITERS) {
            LG_PAUSE();
            spins++;
        }
        if (g == seen) {
            std::unique_lock<std::mutex> lk(mu_);
            sleepers_.fetch_add(1);
            cv_.wait(lk, [&] { return generation_.load(std::memory_order_acquire) != seen; });
            sleepers_.fetch_sub(1);
            g = generation_.load(std::memory_order_acquire);
        }
        seen = g;
        if (stop_.load()) return;
        work(g, tid);
    }
}

}  // namespace lg

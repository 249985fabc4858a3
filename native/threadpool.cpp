// Persistent worker pool: spin-then-sleep dispatch on a generation counter.
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

// Spins before a worker sleeps: long enough to bridge the gaps between the dispatches of
// one forward pass (tens of microseconds), short enough not to burn a shared core for long.
static constexpr int SPIN_ITERS = 1 << 16;

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

void ThreadPool::dispatch(TaskFn fn, void* ctx) {
    if (n_threads_ == 1) { fn(ctx, 0, 1); return; }
    task_ = fn;
    ctx_ = ctx;
    pending_.store(n_threads_ - 1, std::memory_order_relaxed);
    {
        // Publishing under the mutex closes the race with a worker about to sleep.
        std::lock_guard<std::mutex> lk(mu_);
        generation_.fetch_add(1, std::memory_order_release);
    }
    if (sleepers_.load(std::memory_order_acquire) > 0) cv_.notify_all();
    fn(ctx, 0, n_threads_);
    int spins = 0;
    while (pending_.load(std::memory_order_acquire) > 0) {
        if (++spins < SPIN_ITERS) LG_PAUSE();
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
        task_(ctx_, tid, n_threads_);
        pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
}

}  // namespace lg

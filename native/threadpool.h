// Persistent worker pool: the caller plus n_threads-1 workers run one task at a time.
// Knows nothing about models; callers split work themselves (by output rows, by pairs).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace lg {

// Dispatch is a generation counter workers spin on (then sleep on a condition variable),
// so a forward pass with ~10 dispatches per layer pays well under a microsecond each when
// the cores are ours, and idles cheaply when they are not. run() allocates nothing.
class ThreadPool {
public:
    explicit ThreadPool(int n_threads);   // n_threads >= 1; the caller is thread 0
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return n_threads_; }

    // Run fn(tid, n_threads) on every thread (tid 0 on the caller); returns when all finished.
    template <class F>
    void run(F& fn) {
        dispatch(&trampoline<F>, &fn);
    }

private:
    using TaskFn = void (*)(void* ctx, int tid, int n_threads);
    template <class F>
    static void trampoline(void* ctx, int tid, int nt) { (*static_cast<F*>(ctx))(tid, nt); }

    void dispatch(TaskFn fn, void* ctx);
    void worker_loop(int tid);

    int n_threads_;
    std::vector<std::thread> workers_;
    TaskFn task_ = nullptr;
    void* ctx_ = nullptr;
    alignas(64) std::atomic<uint32_t> generation_{0};
    alignas(64) std::atomic<int> pending_{0};
    alignas(64) std::atomic<int> sleepers_{0};
    std::atomic<bool> stop_{false};
    std::mutex mu_;
    std::condition_variable cv_;
};

// [begin, end) of the tid-th of nt near-equal parts of [0, n), boundaries rounded to `align`.
inline void split_range(int64_t n, int tid, int nt, int64_t align, int64_t* begin, int64_t* end) {
    int64_t units = (n + align - 1) / align;
    int64_t b = units * tid / nt * align, e = units * (tid + 1) / nt * align;
    *begin = b < n ? b : n;
    *end = e < n ? e : n;
}

}  // namespace lg

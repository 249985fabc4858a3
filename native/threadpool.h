// Persistent worker pool: the caller plus n_threads-1 workers share one task at a time, split
// into chunks claimed dynamically. Knows nothing about models; callers define what a chunk is.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace lg {

// A task is n_chunks independent pieces of work; any thread may run any chunk, so results
// must not depend on which thread runs a chunk (ours split by output rows / (token, head)).
// Chunks are claimed from one atomic word tagged with the task's generation, so a worker
// that the OS did not schedule in time simply finds nothing left: the caller does the work
// itself instead of waiting a time slice for it (2 shared cores, many processes).
// Idle workers spin on the generation, then sleep on a condition variable. run() allocates nothing.
static constexpr int MAX_CHUNKS = 0xffff;  // chunks per task (16 bits of the claim word)

class ThreadPool {
public:
    explicit ThreadPool(int n_threads);   // n_threads >= 1; the caller is thread 0
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return n_threads_; }

    // Run fn(tid, chunk, n_chunks) for every chunk in [0, n_chunks) (n_chunks <= MAX_CHUNKS);
    // returns when all finished.
    // tid in [0, size()) names the thread running it (for per-thread scratch buffers).
    template <class F>
    void run(int n_chunks, F& fn) {
        dispatch(&trampoline<F>, &fn, n_chunks);
    }

private:
    using TaskFn = void (*)(void* ctx, int tid, int chunk, int n_chunks);
    template <class F>
    static void trampoline(void* ctx, int tid, int chunk, int n) { (*static_cast<F*>(ctx))(tid, chunk, n); }

    void dispatch(TaskFn fn, void* ctx, int n_chunks);
    void work(uint32_t gen, int tid);   // claim and run chunks of task `gen` until none are left
    void worker_loop(int tid);

    int n_threads_;
    std::vector<std::thread> workers_;
    TaskFn task_ = nullptr;
    void* ctx_ = nullptr;
    alignas(64) std::atomic<uint64_t> claim_{0};   // generation << 32 | n_chunks << 16 | next chunk
    alignas(64) std::atomic<uint32_t> generation_{0};
    alignas(64) std::atomic<int> done_{0};
    alignas(64) std::atomic<int> sleepers_{0};
    std::atomic<bool> stop_{false};
    std::mutex mu_;
    std::condition_variable cv_;
};

// [begin, end) of the i-th of n near-equal parts of [0, total), boundaries rounded to `align`.
inline void split_range(int64_t total, int i, int n, int64_t align, int64_t* begin, int64_t* end) {
    int64_t units = (total + align - 1) / align;
    int64_t b = units * i / n * align, e = units * (i + 1) / n * align;
    *begin = b < total ? b : total;
    *end = e < total ? e : total;
}

}  // namespace lg

// The machine's memory read bandwidth, measured the way decode reads weights: the engine's own thread
// pool streaming one large buffer, each thread a contiguous slice. Knows nothing about models; the
// benchmarks (tools/bench/bench_engine.py) divide it by the weight bytes a token reads to get the roofline.
#include <pybind11/pybind11.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "threadpool.h"

namespace py = pybind11;

namespace {

constexpr int64_t MIN_MB = 64;       // well past every cache level of the boxes we run on
constexpr int64_t MAX_MB = 16384;
constexpr int ACCUMULATORS = 8;      // independent chains: the loop vectorizes and is never latency-bound

// XOR of every 64-bit word of [p, p + n): a result the compiler cannot drop, one load per word.
uint64_t xor_words(const uint64_t* p, int64_t n) {
    uint64_t acc[ACCUMULATORS] = {};
    int64_t i = 0;
    for (; i + ACCUMULATORS <= n; i += ACCUMULATORS)
        for (int k = 0; k < ACCUMULATORS; ++k) acc[k] ^= p[i + k];
    for (; i < n; ++i) acc[0] ^= p[i];
    uint64_t r = 0;
    for (uint64_t a : acc) r ^= a;
    return r;
}

// Best of `reps` passes over an `mb` MiB buffer, `threads` threads; GB/s (1e9 bytes read per second).
double read_bandwidth_gbs(int64_t mb, int threads, int reps) {
    if (mb < MIN_MB || mb > MAX_MB)
        throw std::invalid_argument("read_bandwidth_gbs: mb must be in [" + std::to_string(MIN_MB) + ", " +
                                    std::to_string(MAX_MB) + "], got " + std::to_string(mb));
    if (threads < 1) throw std::invalid_argument("read_bandwidth_gbs: threads must be >= 1, got " + std::to_string(threads));
    if (reps < 1) throw std::invalid_argument("read_bandwidth_gbs: reps must be >= 1, got " + std::to_string(reps));
    const int64_t bytes = mb << 20, words = bytes / 8;
    auto* buf = static_cast<uint64_t*>(std::aligned_alloc(64, static_cast<size_t>(bytes)));
    if (!buf) throw std::bad_alloc();
    std::memset(buf, 0x5a, static_cast<size_t>(bytes));   // fault every page in before timing
    double best = 0.0;
    {
        py::gil_scoped_release nogil;
        lg::ThreadPool pool(threads);
        uint64_t sink[256] = {};   // per-thread results (threads beyond 256 share slots; only kept alive)
        auto pass = [&](int tid, int chunk, int n_chunks) {
            int64_t b, e;
            lg::split_range(words, chunk, n_chunks, 8, &b, &e);
            sink[tid % 256] ^= xor_words(buf + b, e - b);
        };
        pool.run(threads, pass);   // warm-up: threads started, TLB entries made
        for (int r = 0; r < reps; ++r) {
            const auto t0 = std::chrono::steady_clock::now();
            pool.run(threads, pass);
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            best = std::max(best, static_cast<double>(bytes) / s / 1e9);
        }
        volatile uint64_t keep = 0;
        for (uint64_t v : sink) keep = keep ^ v;
        (void)keep;
    }
    std::free(buf);
    return best;
}

}  // namespace

void register_membench(py::module_& m) {
    m.def("read_bandwidth_gbs", &read_bandwidth_gbs, py::arg("mb") = 512, py::arg("threads") = 1, py::arg("reps") = 5,
          "Memory read bandwidth in GB/s (1e9 bytes/s): the best of `reps` passes of `threads` threads of the "
          "engine's thread pool, each XOR-reading its slice of an `mb` MiB buffer. Decode's roofline bandwidth.");
}

// The calibrated kernel plan's table: which kernel variant runs a (weight type, K, records) shape when
// the static plan (x86/plan.h) is overridden. Every variant of a shape is bit-identical (kernels.h), so
// the table changes speed only; a race between a reader and a writer can only pick another variant.
// Readers (matmul_simd, every call) take no lock: entries are single atomic words, published by count.
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>

#include "quant/kernels.h"
#include "quant/quant.h"

namespace lg {

namespace {

// An entry: type (8 bits) | K (32) | records (16) | variant index (8).
constexpr int MAX_ENTRIES = 256;
std::atomic<uint64_t> g_entries[MAX_ENTRIES];
std::atomic<int> g_count{0};
std::mutex g_write;  // writers only

uint64_t shape_key(GGMLType wt, int64_t K, int n_rec) {
    return (uint64_t(static_cast<uint32_t>(wt) & 0xff) << 56) | (uint64_t(K & 0xffffffff) << 24) | (uint64_t(n_rec & 0xffff) << 8);
}

}  // namespace

int kernel_variant_index(GGMLType wt, int64_t K, int n_rec) {
    const int n = g_count.load(std::memory_order_acquire);
    if (n == 0) return 0;
    const uint64_t key = shape_key(wt, K, n_rec);
    for (int i = 0; i < n; ++i) {
        const uint64_t e = g_entries[i].load(std::memory_order_relaxed);
        if ((e & ~uint64_t(0xff)) == key) return static_cast<int>(e & 0xff);
    }
    return 0;
}

std::vector<std::string> kernel_variants(GGMLType wt, int64_t K, int n_rec) {
    quant_check(wt, K, "kernel_variants");
    if (n_rec < 1) throw std::invalid_argument("kernel_variants: records must be >= 1, got " + std::to_string(n_rec));
    const char* names[MAX_KERNEL_VARIANTS];
    const int n = simd_variant_names(wt, K, n_rec, names);
    return std::vector<std::string>(names, names + n);
}

void set_kernel_variant(GGMLType wt, int64_t K, int n_rec, const std::string& name) {
    if (K > 0xffffffffLL || n_rec > 0xffff)
        throw std::invalid_argument("set_kernel_variant: K or records out of range for the plan table");
    const std::vector<std::string> names = kernel_variants(wt, K, n_rec);
    int v = -1;
    for (size_t i = 0; i < names.size(); ++i)
        if (names[i] == name) v = static_cast<int>(i);
    if (v < 0)
        throw std::invalid_argument("set_kernel_variant: no variant '" + name + "' for " + ggml_type_name(wt) + " K=" +
                                    std::to_string(K) + " records=" + std::to_string(n_rec));
    const uint64_t key = shape_key(wt, K, n_rec), entry = key | uint64_t(v);
    std::lock_guard<std::mutex> lock(g_write);
    const int n = g_count.load(std::memory_order_relaxed);
    for (int i = 0; i < n; ++i)
        if ((g_entries[i].load(std::memory_order_relaxed) & ~uint64_t(0xff)) == key) {
            g_entries[i].store(entry, std::memory_order_relaxed);
            return;
        }
    if (n == MAX_ENTRIES) throw std::length_error("set_kernel_variant: the plan table is full");
    g_entries[n].store(entry, std::memory_order_relaxed);
    g_count.store(n + 1, std::memory_order_release);
}

void clear_kernel_variants() {
    std::lock_guard<std::mutex> lock(g_write);
    g_count.store(0, std::memory_order_release);
}

std::vector<KernelChoice> kernel_variant_table() {
    std::vector<KernelChoice> out;
    const int n = g_count.load(std::memory_order_acquire);
    for (int i = 0; i < n; ++i) {
        const uint64_t e = g_entries[i].load(std::memory_order_relaxed);
        const auto wt = static_cast<GGMLType>(e >> 56);
        const int64_t K = static_cast<int64_t>((e >> 24) & 0xffffffff);
        const int n_rec = static_cast<int>((e >> 8) & 0xffff);
        const char* names[MAX_KERNEL_VARIANTS];
        const int nv = simd_variant_names(wt, K, n_rec, names);
        const int v = static_cast<int>(e & 0xff);
        out.push_back({wt, K, n_rec, v < nv ? names[v] : "static"});
    }
    return out;
}

// Without x86 kernels (NEON, scalar): the static plan is the only variant.
#if !(LG_SIMD_AVX512 || LG_SIMD_AVX2)
int simd_variant_names(GGMLType, int64_t, int, const char** names) {
    names[0] = "static";
    return 1;
}
#endif

}  // namespace lg

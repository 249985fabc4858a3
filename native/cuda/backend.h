// The CUDA backend as the rest of the engine sees it; compiles without CUDA. CudaEngine has
// lg::Engine's operations (same chunking, same KV rules) with weights, cache and activations
// resident on the device. Knows nothing about Python or tokenization.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "engine.h"  // lg::EngineOptions, lg::Config, lg::EvictPolicy

namespace lg {
namespace cuda {

#ifdef LINEGATE_HAVE_CUDA
// True when the CUDA runtime reports at least one device (false, never an error, on a machine
// without a driver or GPU).
bool cuda_available();
std::string device_name(int device);
// Measured device memory bandwidth: cudaMemcpy device-to-device of `bytes`, read + write.
double d2d_bandwidth_gbps(size_t bytes, int iters);

class CudaEngine {
public:
    // Loads the GGUF (validated by lg::Model), uploads weights once as stored (quantized
    // blocks as-is) and allocates cache + activations once. Throws naming the file/limit.
    CudaEngine(const std::string& path, const EngineOptions& opt, int device = 0);
    ~CudaEngine();
    CudaEngine(const CudaEngine&) = delete;
    CudaEngine& operator=(const CudaEngine&) = delete;

    const Config& config() const;
    const KVCache& cache() const;  // bookkeeping only (sizes, used counts)
    int max_chunk() const;
    size_t device_bytes() const;   // weights + state on the device
    size_t kv_bytes() const;       // the fp16 K/V cache on the device
    int64_t bytes_per_token() const;
    std::string device() const;
    ActPrecision act_precision() const;  // EngineOptions::act_precision, as on the CPU (quant.h)

    // Same contracts as lg::Engine (engine.h); logits are host pointers.
    void prefill_stream(const int32_t* tokens, int n, float* logits, bool all_logits);
    void forward_scratch(const int32_t* tokens, int n, float* logits, bool all_logits);
    void forward_hidden(const int32_t* tokens, int n, float* hidden, float* logits);
    void rollback(int n);
    uint64_t stream_checksum() const;

    // forward_scratch, then the next token chosen on the device (greedy when temperature <= 0,
    // else a sample of softmax(logits / temperature)); logits never leave the device.
    int32_t forward_scratch_next(const int32_t* tokens, int n, float temperature, uint64_t seed);
    // n_steps single-token steps in scratch starting from `first`, each feeding the next token
    // chosen on the device (no host round trip; CUDA graph when enabled). out[i] = token after
    // step i. The last output is not yet in the cache.
    void decode(int32_t first, int n_steps, int32_t* out, float temperature, uint64_t seed);
    void set_use_graph(bool on);
    bool use_graph() const;
    // RMSNorm+quantize, q+k+v and gate+up each in one launch (default true); the same values either way.
    void set_fuse(bool on);
    bool fuse() const;
    // Programmatic dependent launches (sm_90; default false until measured on a device): each kernel
    // may start while the one before it drains and fetch its weights into L2 first. Same values.
    void set_pdl(bool on);
    bool pdl() const;
    // Products over T > 1 tokens on int8 tensor cores (default false until measured), else dp4a.
    // Same values either way (the accumulation order is shared): batched and one-token forwards stay
    // bit-identical.
    void set_mma(bool on);
    bool mma() const;

private:
    struct Impl;
    std::unique_ptr<Impl> p_;
};
#else
inline bool cuda_available() { return false; }
#endif

}  // namespace cuda
}  // namespace lg

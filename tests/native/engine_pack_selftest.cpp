// The engine with packed weights against the engine without, on one GGUF, for targets the Python tests cannot
// reach (aarch64 under qemu: the packed NEON kernels inside a whole forward pass). Prefills a stream, then takes
// all-position logits of a scratch chunk and of the same tokens one at a time; both engines must give the same
// bits, and the packed one must have packed matrices. Built by tests/native/test_quant_simd_paths.py.
//   engine_pack_selftest MODEL.gguf
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "engine.h"

namespace {

std::vector<float> run(const char* path, const char* pack, int* packed) {
    setenv("LINEGATE_PACK_WEIGHTS", pack, 1);
    lg::EngineOptions o;
    o.n_sink = 4;
    o.n_ring = 32;
    o.n_scratch = 24;
    o.n_threads = 2;
    lg::Engine e(path, o);
    *packed = e.model().packed_matrices();
    const int V = e.config().n_vocab;
    std::vector<int32_t> stream(40), toks(6);
    for (size_t i = 0; i < stream.size(); ++i) stream[i] = static_cast<int32_t>((i * 37 + 11) % V);
    for (size_t i = 0; i < toks.size(); ++i) toks[i] = static_cast<int32_t>((i * 53 + 5) % V);
    e.prefill_stream(stream.data(), static_cast<int>(stream.size()), nullptr, false);
    std::vector<float> out(toks.size() * V * 2);
    e.forward_scratch(toks.data(), static_cast<int>(toks.size()), out.data(), true);
    e.rollback(0);
    for (size_t i = 0; i < toks.size(); ++i) e.forward_scratch(&toks[i], 1, out.data() + (toks.size() + i) * V, false);
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) return 2;
    int n_plain = -1, n_packed = -1;
    const std::vector<float> plain = run(argv[1], "0", &n_plain), packed = run(argv[1], "1", &n_packed);
    const bool same = plain.size() == packed.size() && std::memcmp(plain.data(), packed.data(), plain.size() * 4) == 0;
    std::printf("simd: %s, matrices packed: %d, logits %s\n", lg::quant_simd_name(), n_packed, same ? "identical" : "MISMATCH");
    return same && n_plain == 0 && n_packed > 0 ? 0 : 1;
}

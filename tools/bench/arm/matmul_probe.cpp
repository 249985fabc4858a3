// One matmul call shape for tools/bench/bench_arm.py, run under qemu-aarch64 with qemu_insn.c to count the
// instructions the engine's kernels execute: random blocks of one weight type (rows x K), T tokens of
// activations at a precision (q8: one record a token, q8x2: two), then `calls` calls of lg::matmul (of
// lg::matmul_packed on the weights packed, for the types the engine packs). Two runs
// differing only in `calls` give the instructions of one call, setup excluded.
//   matmul_probe TYPE K ROWS TOKENS q8|q8x2 CALLS
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "quant.h"
#include "quant/blocks.h"
#include "quant/kernels.h"

int main(int argc, char** argv) {
    if (argc != 7) {
        std::fprintf(stderr, "usage: matmul_probe TYPE K ROWS TOKENS q8|q8x2 CALLS\n");
        return 2;
    }
    const std::string name = argv[1];
    lg::GGMLType t{};
    bool found = false;
    for (lg::GGMLType c : {lg::GGMLType::Q4_0, lg::GGMLType::Q4_1, lg::GGMLType::Q5_0, lg::GGMLType::Q5_1,
                           lg::GGMLType::Q8_0, lg::GGMLType::Q4_K, lg::GGMLType::Q5_K, lg::GGMLType::Q6_K})
        if (name == lg::ggml_type_name(c)) t = c, found = true;
    const int64_t K = std::atoll(argv[2]), rows = std::atoll(argv[3]);
    const int T = std::atoi(argv[4]), calls = std::atoi(argv[6]);
    if (!found || K <= 0 || K % lg::quant_block_elems(t) || rows <= 0 || T <= 0 || calls < 0) {
        std::fprintf(stderr, "matmul_probe: bad arguments\n");
        return 2;
    }
    const auto prec = std::string(argv[5]) == "q8" ? lg::ActPrecision::Q8 : lg::ActPrecision::Q8X2;
    const int64_t be = lg::quant_block_elems(t);
    const int64_t bb = be == 32                        ? lg::ggml_bytes_per_block32(t)
                       : t == lg::GGMLType::Q4_K ? static_cast<int64_t>(sizeof(lg::BlockQ4K))
                       : t == lg::GGMLType::Q5_K ? static_cast<int64_t>(sizeof(lg::BlockQ5K))
                                                 : static_cast<int64_t>(sizeof(lg::BlockQ6K));
    std::vector<uint8_t> W(static_cast<size_t>(rows * (K / be) * bb));
    uint32_t s = 12345;
    for (auto& v : W) v = static_cast<uint8_t>((s = s * 1664525u + 1013904223u) >> 24);
    const uint16_t scale = 0x2000;  // fp16 2^-7: every block scale finite
    const int off = t == lg::GGMLType::Q6_K ? 208 : 0;
    for (size_t b = 0; b < W.size() / bb; ++b) std::memcpy(&W[b * bb + off], &scale, 2);
    std::vector<float> x(static_cast<size_t>(T * K));
    for (auto& v : x) v = static_cast<float>(static_cast<int32_t>(s = s * 1664525u + 1013904223u)) * 1e-9f;
    std::vector<uint8_t> acts(lg::act_buffer_bytes(t, K, T, prec));
    lg::prepare_acts(t, x.data(), K, T, acts.data(), prec);
    std::vector<float> y(static_cast<size_t>(T * rows));
    // as the engine loads it: packed where the type has a packed layout (pack_weights, before any call)
    const bool packed = lg::packed_kernels() && lg::pack_type(t) && rows % lg::PACK_ROWS == 0;
    if (packed) lg::pack_weights(t, W.data(), rows, K);
    for (int c = 0; c < calls; ++c) {
        if (packed) lg::matmul_packed(t, W.data(), K, 0, rows, acts.data(), x.data(), T, y.data(), rows);
        else lg::matmul(t, W.data(), K, 0, rows, acts.data(), x.data(), T, y.data(), rows);
    }
    std::printf("%s y0 %g\n", lg::quant_simd_name(), y[0]);
    return 0;
}

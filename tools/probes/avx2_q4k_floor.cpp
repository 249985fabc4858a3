// How close the AVX2 one-token Q4_K kernel (native/quant/x86/avx2_rowlane.h: rowlane_decode + rowlane_block<2, true>, what
// rowlane_rows_one_token runs per block of 8 rows) is to the floor set by its vpmaddubsw: the same 128 vpmaddubsw a block
// (8 rows x 256 weights x 2 activation terms), with their loads, nibble masks and int16 adds, and nothing else.
// Data in L1 (one block of 8 rows, decoded once), one thread, rounds alternating between the loops; medians.
// Only for builds where the AVX2 kernels are the ones chosen (no AVX-512 VNNI), e.g. a Zen 3 core:
//   g++ -O3 -std=gnu++17 -march=native -fno-math-errno -Inative -o /tmp/avx2_q4k_floor tools/probes/avx2_q4k_floor.cpp \
//     && /tmp/avx2_q4k_floor
// Arguments: iterations per timing (default 1000000), rounds (default 9).
// Last line: one JSON object (ns per block of 8 rows).
#include "quant/x86/avx2_rowlane.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#if LG_SIMD_AVX2
using namespace lg;
using namespace lg::quant::avx2;

namespace {

// rowlane_block<2, true>'s integer core alone: the same vpmaddubsw on the same operands, int16 sums, no scales.
__attribute__((noinline)) __m256i maddubs_floor(const RowlaneQ4K& w, const __m256i* const* xe, int64_t b) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256i tot = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
        __m256i s0 = _mm256_setzero_si256(), s1 = s0;
        const __m256i* q = w.raw + 8 * (j / 2);
#pragma GCC unroll 8
        for (int p = 0; p < 8; ++p) {
            const __m256i v = _mm256_and_si256(j % 2 ? _mm256_srli_epi16(q[p], 4) : q[p], m4);
            s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(v, _mm256_load_si256(xe[0] + 64 * b + 8 * j + p)));
            s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(v, _mm256_load_si256(xe[1] + 64 * b + 8 * j + p)));
        }
        tot = _mm256_add_epi16(tot, _mm256_add_epi16(s0, s1));
    }
    return tot;
}

}  // namespace

int main(int argc, char** argv) {
    const long iters = argc > 1 ? std::atol(argv[1]) : 1000000;
    const int rounds = argc > 2 ? std::atoi(argv[2]) : 9;
    constexpr int64_t nb = 6, K = nb * QK_K;  // a 1536-wide row, as the 1.5B's ffn_gate/ffn_up
    std::mt19937 rng(1);
    std::vector<BlockQ4K> W(ROWLANE_ROWS * nb);
    for (auto& blk : W) {
        uint8_t* p = reinterpret_cast<uint8_t*>(&blk);
        for (size_t i = 0; i < sizeof(blk); ++i) p[i] = static_cast<uint8_t>(rng());
        blk.d = 0x2c00;     // 2^-4 as f16
        blk.dmin = 0x2800;  // 2^-5
    }
    const ActLayout L = act_layout(GGMLType::Q4_K, K);
    std::vector<uint8_t> buf(L.stride * 2 + 64);
    uint8_t* acts = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(buf.data()) + 63) & ~uintptr_t(63));
    for (int64_t i = 0; i < L.stride * 2; ++i) acts[i] = static_cast<uint8_t>(rng() % 64);
    static __m256i xe_buf[2][nb * 64];  // the records pre-broadcast, as rowlane_rows_one_token keeps them
    for (int t = 0; t < 2; ++t)
        for (int64_t d = 0; d < nb * 64; ++d)
            xe_buf[t][d] = bcast4(reinterpret_cast<const int8_t*>(acts + t * L.stride) + 4 * d);
    const __m256i* xe[2] = {xe_buf[0], xe_buf[1]};
    RowlaneQ4K w;
    {
        const BlockQ4K* rows[ROWLANE_ROWS];
        for (int i = 0; i < ROWLANE_ROWS; ++i) rows[i] = &W[i * nb];
        rowlane_decode(rows, &w);
    }
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    __m256i sink = _mm256_setzero_si256();
    auto time_ns = [&](auto&& fn) {
        const auto t0 = std::chrono::steady_clock::now();
        for (long n = 0; n < iters; ++n) fn(n % nb);
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters * 1e9;
    };
    const char* names[4] = {"kernel_ns", "floor_ns", "decode_ns", "decode_kernel_ns"};
    std::vector<double> r[4];
    for (int round = 0; round < rounds; ++round) {
        r[0].push_back(time_ns([&](int64_t b) {
            rowlane_block<2, true>(w, acts, L, b, 0, acc, xe);
            asm volatile("" ::: "memory");
        }));
        r[1].push_back(time_ns([&](int64_t b) { sink = _mm256_add_epi16(sink, maddubs_floor(w, xe, b)); }));
        r[2].push_back(time_ns([&](int64_t b) {
            const BlockQ4K* rows[ROWLANE_ROWS];
            for (int i = 0; i < ROWLANE_ROWS; ++i) rows[i] = &W[i * nb + b];
            rowlane_decode(rows, &w);
            asm volatile("" ::: "memory");
        }));
        r[3].push_back(time_ns([&](int64_t b) {
            const BlockQ4K* rows[ROWLANE_ROWS];
            for (int i = 0; i < ROWLANE_ROWS; ++i) rows[i] = &W[i * nb + b];
            rowlane_decode(rows, &w);
            rowlane_block<2, true>(w, acts, L, b, 0, acc, xe);
        }));
    }
    double med[4];
    for (int k = 0; k < 4; ++k) {
        std::sort(r[k].begin(), r[k].end());
        med[k] = r[k][r[k].size() / 2];
        std::printf("%-17s median %7.1f  min %7.1f ns per block of 8 rows\n", names[k], med[k], r[k].front());
    }
    float chk = 0;
    alignas(32) float f[8];
    _mm256_store_ps(f, _mm256_add_ps(acc[0], acc[1]));
    for (float v : f) chk += v;
    std::printf("{\"kernel_ns\": %.2f, \"floor_ns\": %.2f, \"decode_ns\": %.2f, \"decode_kernel_ns\": %.2f, "
                "\"kernel_over_floor\": %.3f, \"checksum\": %g, \"sink\": %d}\n",
                med[0], med[1], med[2], med[3], med[0] / med[1], chk, _mm256_extract_epi32(sink, 0));
}
#else
int main() {
    std::printf("built without the AVX2 kernels (LG_SIMD_AVX2 is not set: no AVX2, or AVX-512 VNNI is chosen)\n");
    return 1;
}
#endif

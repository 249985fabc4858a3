// Peak issue rate of 512-bit vpdpbusd / vpmulld on one core: the compute ceiling the K-quant kernels
// (native/quant/x86/avx512*.cpp) are measured against. 16 independent accumulator chains hide the latency;
// the loops are unrolled so the chains live in registers (check: objdump shows 16 vpdpbusd in a row;
// an earlier version kept them in memory and measured load-op-store, half the real rate).
//   g++ -O2 -march=native -o /tmp/vnni_peak tools/probes/vnni_peak.cpp && /tmp/vnni_peak
#include <immintrin.h>

#include <chrono>
#include <cstdio>

int main() {
#if defined(__AVX512VNNI__)
    __m512i a[16];
    for (int i = 0; i < 16; ++i) a[i] = _mm512_set1_epi32(i);
    __m512i x = _mm512_set1_epi32(3), w = _mm512_set1_epi32(5);
    const long n = 100000000;
    auto t = std::chrono::steady_clock::now();
    for (long r = 0; r < n; ++r) {
#pragma GCC unroll 16
        for (int i = 0; i < 16; ++i) a[i] = _mm512_dpbusd_epi32(a[i], x, w);
        asm volatile("" : "+v"(x));
    }
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    std::printf("vpdpbusd zmm: %.2f G/s (%.0f G int8 MACs/s)\n", n * 16 / dt / 1e9, n * 16 * 64 / dt / 1e9);
    t = std::chrono::steady_clock::now();
    for (long r = 0; r < n; ++r) {
#pragma GCC unroll 16
        for (int i = 0; i < 16; ++i) a[i] = _mm512_mullo_epi32(a[i], x);
        asm volatile("" : "+v"(x));
    }
    dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    std::printf("vpmulld zmm:  %.2f G/s\n", n * 16 / dt / 1e9);
    int s = 0;
    for (int i = 0; i < 16; ++i) s += _mm512_reduce_add_epi32(a[i]);
    return s == 12345;
#else
    std::printf("this CPU/compiler has no AVX-512 VNNI\n");
    return 0;
#endif
}

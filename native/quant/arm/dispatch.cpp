// The aarch64 kernel variant, chosen once at run time from the CPU's HWCAP (not from the build machine):
// neon_dotprod where the CPU has sdot (Cortex-A55/A76: every RK3588 core), else plain Armv8-A neon.
// LINEGATE_NEON=<name> picks a variant by hand (tests, A/B runs); one the CPU lacks is refused.
#include "quant/arm/neon.h"

#if LG_SIMD_NEON
#include <cstdlib>
#include <stdexcept>
#include <string>
#if defined(__linux__)
#include <sys/auxv.h>
#endif

namespace lg {

namespace {

constexpr unsigned long HWCAP_DOTPROD = 1ul << 20;  // HWCAP_ASIMDDP (asm/hwcap.h), absent from old headers

unsigned long cpu_hwcap() {
#if defined(__linux__)
    return getauxval(AT_HWCAP);
#elif defined(__ARM_FEATURE_DOTPROD)
    return HWCAP_DOTPROD;
#else
    return 0;
#endif
}

struct Variant {
    const char* name;
    unsigned long needs;  // HWCAP bits the variant's instructions need
    bool (*matmul)(GGMLType, const uint8_t*, int64_t, int64_t, int64_t, const uint8_t*, const float*, int, float*,
                   int64_t, int);
    bool (*quantize)(const float*, int64_t, int, int8_t*, float*);
    bool (*matmul_packed)(GGMLType, const uint8_t*, int64_t, int64_t, int64_t, const uint8_t*, int, float*, int64_t, int);
};

// Best first: the first variant whose needs the CPU meets runs. (An i8mm/smmla variant would go first; none
// is written yet, so a CPU with i8mm runs neon+dotprod.)
constexpr Variant VARIANTS[] = {
    {"neon+dotprod", HWCAP_DOTPROD, quant::neon_dotprod::matmul, quant::neon_dotprod::quantize_blocks,
     quant::neon_dotprod::matmul_packed},
    {"neon", 0, quant::neon::matmul, quant::neon::quantize_blocks, quant::neon::matmul_packed},
};

const Variant& choose() {
    const unsigned long hwcap = cpu_hwcap();
    const char* want = std::getenv("LINEGATE_NEON");
    std::string names;
    for (const Variant& v : VARIANTS) {
        const bool fits = (hwcap & v.needs) == v.needs;
        if (want == nullptr || *want == '\0') {
            if (fits) return v;
            continue;
        }
        if (want == std::string(v.name)) {
            if (!fits) throw std::runtime_error(std::string("LINEGATE_NEON=") + want + ": this CPU lacks its instructions");
            return v;
        }
        names += names.empty() ? v.name : std::string(", ") + v.name;
    }
    throw std::runtime_error(std::string("LINEGATE_NEON=") + (want ? want : "") + ": unknown variant (" + names + ")");
}

const Variant& variant() {
    static const Variant& v = choose();  // thread-safe once; the first matmul or quantize decides
    return v;
}

}  // namespace

bool matmul_simd(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts,
                 const float* x, int n_rec, float* y, int64_t ldy, int pair) {
    return variant().matmul(wt, W, K, r0, r1, acts, x, n_rec, y, ldy, pair);
}

bool matmul_packed_simd(GGMLType wt, const uint8_t* W, int64_t K, int64_t r0, int64_t r1, const uint8_t* acts,
                        int n_rec, float* y, int64_t ldy, int pair) {
    return variant().matmul_packed(wt, W, K, r0, r1, acts, n_rec, y, ldy, pair);
}

bool quantize_blocks_simd(const float* x, int64_t n_blocks, int ablk, int8_t* qs, float* d) {
    return variant().quantize(x, n_blocks, ablk, qs, d);
}

const char* simd_name() { return variant().name; }

}  // namespace lg

#endif

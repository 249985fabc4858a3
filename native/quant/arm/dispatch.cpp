// The aarch64 kernel variant, chosen once at run time from the CPU's HWCAP (not from the build machine):
// neon_i8mm where the CPU has smmla and sdot (Armv8.6-A cores: Neoverse N2/V1, Cortex-A710/X2 and later),
// neon_dotprod where it has sdot (Cortex-A55/A76: every RK3588 core), else plain Armv8-A neon.
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
constexpr unsigned long CAP_I8MM = (1ul << 13) << 32;  // HWCAP2_I8MM (in AT_HWCAP2), moved up as cpu_hwcap does

// HWCAP in the low 32 bits, HWCAP2 above (both are 32-bit masks on aarch64 Linux).
unsigned long cpu_hwcap() {
#if defined(__linux__)
    return (getauxval(AT_HWCAP) & 0xffffffffu) | (getauxval(AT_HWCAP2) & 0xffffffffu) << 32;
#else
    unsigned long caps = 0;
#if defined(__ARM_FEATURE_DOTPROD)
    caps |= HWCAP_DOTPROD;
#endif
#if defined(__ARM_FEATURE_MATMUL_INT8)
    caps |= CAP_I8MM;
#endif
    return caps;
#endif
}

struct Variant {
    const char* name;
    unsigned long needs;  // HWCAP bits the variant's instructions need
    bool (*matmul)(GGMLType, const uint8_t*, int64_t, int64_t, int64_t, const uint8_t*, const float*, int, float*,
                   int64_t, int);
    bool (*quantize)(const float*, int64_t, int, int8_t*, float*);
    bool (*matmul_packed)(GGMLType, const uint8_t*, int64_t, int64_t, int64_t, const uint8_t*, int, float*, int64_t, int);
    bool (*row_pairs)(GGMLType);  // packed layout of wt (kernels.h: packed_row_pairs); null: the default
};

// Best first: the first variant whose needs the CPU meets runs. neon+i8mm differs from neon+dotprod only in
// its packed kernels (smmla over the row-pair layout); the GGUF kernels are the dotprod ones compiled again.
constexpr Variant VARIANTS[] = {
    {"neon+i8mm", HWCAP_DOTPROD | CAP_I8MM, quant::neon_i8mm::matmul, quant::neon_i8mm::quantize_blocks,
     quant::neon_i8mm::matmul_packed, quant::neon_i8mm::row_pairs},
    {"neon+dotprod", HWCAP_DOTPROD, quant::neon_dotprod::matmul, quant::neon_dotprod::quantize_blocks,
     quant::neon_dotprod::matmul_packed, nullptr},
    {"neon", 0, quant::neon::matmul, quant::neon::quantize_blocks, quant::neon::matmul_packed, nullptr},
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

bool packed_row_pairs(GGMLType wt) { return variant().row_pairs != nullptr && variant().row_pairs(wt); }

}  // namespace lg

#endif

// Standalone check of the compiled-in SIMD kernels against the scalar reference, for targets
// the Python tests cannot reach (aarch64 NEON under qemu): random blocks of every quantized
// type, K = 768 and (legacy 32-blocks) K = 864, whose 27 blocks end in a part-filled group of eight lanes;
// T = 40 and its prefixes 1, 3, 8, as one- and two-term records; then every kernel variant (the calibrated
// plan's choices) of the 1.5B's Q4_K/Q6_K shapes; exit 1 on any bit difference. Built by tests/native/test_quant_simd_paths.py.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "quant.h"
#include "quant/blocks.h"
#include "quant/kernels.h"

using lg::GGMLType;

namespace {

struct TypeCase { GGMLType t; int be, bb; std::vector<int> fp16_offsets; };

uint16_t f32_to_f16_small(float f) {  // normal range only, truncating: enough for test scales
    uint32_t b;
    std::memcpy(&b, &f, 4);
    uint32_t sign = (b >> 16) & 0x8000u;
    int exp = static_cast<int>((b >> 23) & 0xff) - 127 + 15;
    if (exp <= 0) return static_cast<uint16_t>(sign);
    return static_cast<uint16_t>(sign | (exp << 10) | ((b >> 13) & 0x3ff));
}

std::vector<uint8_t> random_weights(std::mt19937& rng, GGMLType t, int64_t n_bytes, int bb, const std::vector<int>& offs) {
    std::normal_distribution<float> normal;
    std::vector<uint8_t> W(static_cast<size_t>(n_bytes));
    for (auto& v : W) v = static_cast<uint8_t>(rng() & 0xff);
    for (size_t blk = 0; blk < W.size() / bb; ++blk)
        for (int off : offs) {
            uint16_t h = f32_to_f16_small(normal(rng) * 0.01f);
            std::memcpy(&W[blk * bb + off], &h, 2);
        }
    return W;
}

// Every variant of the engine's shapes (K 1536, 8960; 1-9 tokens, q8 and q8x2) against the scalar path;
// 40 rows: row-lane groups and a remainder. Returns the number of mismatching (shape, variant)s.
int check_variants(std::mt19937& rng) {
    std::normal_distribution<float> normal;
    int failures = 0, checked = 0;
    const int64_t n_rows = 40;
    for (GGMLType t : {GGMLType::Q4_K, GGMLType::Q6_K})
        for (int64_t K : {1536, 8960}) {
            const int bb = t == GGMLType::Q4_K ? 144 : 210;
            const auto W = random_weights(rng, t, n_rows * K / 256 * bb, bb, t == GGMLType::Q4_K ? std::vector<int>{0, 2} : std::vector<int>{208});
            for (auto prec : {lg::ActPrecision::Q8, lg::ActPrecision::Q8X2})
                for (int T : {1, 2, 3, 4, 5, 8, 9}) {
                    std::vector<float> x(static_cast<size_t>(T * K));
                    for (auto& v : x) v = normal(rng);
                    std::vector<uint8_t> acts(lg::act_buffer_bytes(t, K, T, prec));
                    lg::prepare_acts(t, x.data(), K, T, acts.data(), prec);
                    std::vector<float> ys(static_cast<size_t>(T * n_rows)), yv(ys.size());
                    lg::matmul_scalar(t, W.data(), K, 0, n_rows, acts.data(), x.data(), T, ys.data(), n_rows);
                    const int n_rec = T * lg::records_per_vector(prec);
                    for (const auto& name : lg::kernel_variants(t, K, n_rec)) {
                        lg::set_kernel_variant(t, K, n_rec, name);
                        std::fill(yv.begin(), yv.end(), -1.0f);
                        lg::matmul(t, W.data(), K, 0, n_rows, acts.data(), x.data(), T, yv.data(), n_rows);
                        const bool bad = std::memcmp(ys.data(), yv.data(), ys.size() * 4) != 0;
                        if (bad) std::printf("%-5s K=%lld records=%d variant %s MISMATCH\n", lg::ggml_type_name(t),
                                             static_cast<long long>(K), n_rec, name.c_str());
                        failures += bad;
                        ++checked;
                    }
                    lg::clear_kernel_variants();
                }
        }
    std::printf("variants: %d checked, %s\n", checked, failures ? "MISMATCH" : "ok");
    return failures;
}

// Packed weights (pack_weights, matmul_packed) against the scalar path on the unpacked matrix: every packed type,
// K with whole and part-filled lane groups, 1-9 vectors as one- and two-term records (1-9 and 2-18 records: every
// record tile and split of tile_of, and under the i8mm variant odd counts' last record paired with itself), whole groups and row
// ranges that cut groups; and unpacking gives back the GGUF bytes. Returns the number of failures.
int check_packed(std::mt19937& rng) {
    std::normal_distribution<float> normal;
    int failures = 0, checked = 0;
    const int64_t n_rows = 12;
    struct Case { GGMLType t; int64_t K; int bb; std::vector<int> offs; };
    const Case cases[] = {{GGMLType::Q4_0, 864, 18, {0}}, {GGMLType::Q4_0, 1536, 18, {0}}, {GGMLType::Q8_0, 864, 34, {0}},
                          {GGMLType::Q8_0, 256, 34, {0}}, {GGMLType::Q5_0, 864, 22, {0}}, {GGMLType::Q5_0, 896, 22, {0}},
                          {GGMLType::Q4_1, 864, 20, {0, 2}}, {GGMLType::Q5_1, 896, 24, {0, 2}},
                          {GGMLType::Q4_K, 768, 144, {0, 2}}, {GGMLType::Q4_K, 1536, 144, {0, 2}},
                          {GGMLType::Q5_K, 768, 176, {0, 2}},
                          {GGMLType::Q6_K, 768, 210, {208}}, {GGMLType::Q6_K, 1536, 210, {208}}};
    for (const Case& c : cases) {
        const int64_t be = lg::quant_block_elems(c.t);
        const auto W = random_weights(rng, c.t, n_rows * c.K / be * c.bb, c.bb, c.offs);
        auto P = W;
        lg::pack_weights(c.t, P.data(), n_rows, c.K);
        std::vector<uint8_t> U(W.size());
        lg::unpack_weight_rows(c.t, P.data(), c.K, 0, n_rows / lg::PACK_ROWS, U.data());
        if (U != W || P == W) {
            std::printf("%-5s K=%lld packed round trip MISMATCH\n", lg::ggml_type_name(c.t), static_cast<long long>(c.K));
            ++failures;
        }
        for (auto prec : {lg::ActPrecision::Q8, lg::ActPrecision::Q8X2})
            for (int T = 1; T <= 9; ++T) {
                std::vector<float> x(static_cast<size_t>(T * c.K));
                for (auto& v : x) v = normal(rng);
                std::vector<uint8_t> acts(lg::act_buffer_bytes(c.t, c.K, T, prec));
                lg::prepare_acts(c.t, x.data(), c.K, T, acts.data(), prec);
                std::vector<float> ys(static_cast<size_t>(T * n_rows)), yp(ys.size());
                lg::matmul_scalar(c.t, W.data(), c.K, 0, n_rows, acts.data(), x.data(), T, ys.data(), n_rows);
                for (auto [r0, r1] : {std::pair<int64_t, int64_t>{0, 12}, {1, 11}, {2, 3}, {3, 5}, {4, 8}}) {
                    std::fill(yp.begin(), yp.end(), -1.0f);
                    lg::matmul_packed(c.t, P.data(), c.K, r0, r1, acts.data(), x.data(), T, yp.data(), n_rows);
                    int bad = 0;
                    for (int t = 0; t < T; ++t)
                        for (int64_t r = 0; r < n_rows; ++r) {
                            const float want = r >= r0 && r < r1 ? ys[t * n_rows + r] : -1.0f;
                            bad += std::memcmp(&want, &yp[t * n_rows + r], 4) != 0;
                        }
                    if (bad) std::printf("%-5s K=%lld T=%d %s rows [%lld, %lld) packed MISMATCH (%d)\n", lg::ggml_type_name(c.t),
                                         static_cast<long long>(c.K), T, lg::act_precision_name(prec),
                                         static_cast<long long>(r0), static_cast<long long>(r1), bad);
                    failures += bad != 0;
                    ++checked;
                }
            }
    }
    // Extremes: every weight byte 0x00, 0xff, 0x80 or 0x7f (by row; scales too, the fp16 fields stay small), every
    // activation +-1 (all int8 values +-127, block sums +-32 * 127): the largest sums the kernels' exactness
    // arguments allow for (magic-number converts, split sub-block sums, wrapping scale steps).
    for (const Case& c : cases) {
        const int64_t be = lg::quant_block_elems(c.t), nbr = c.K / be, T = 9;
        auto W = random_weights(rng, c.t, n_rows * nbr * c.bb, c.bb, c.offs);
        for (size_t i = 0; i < W.size(); ++i) {
            const int64_t blk = static_cast<int64_t>(i) / c.bb, at = static_cast<int64_t>(i) % c.bb;
            bool scale = false;
            for (int off : c.offs) scale = scale || (at >= off && at < off + 2);
            const uint8_t fill[4] = {0x00, 0xff, 0x80, 0x7f};
            if (!scale) W[i] = fill[(blk / nbr) % 4];
        }
        auto P = W;
        lg::pack_weights(c.t, P.data(), n_rows, c.K);
        for (auto prec : {lg::ActPrecision::Q8, lg::ActPrecision::Q8X2}) {
            std::vector<float> x(static_cast<size_t>(T * c.K));
            for (int64_t i = 0; i < T * c.K; ++i) x[i] = (i / c.K) % 2 ? -1.0f : 1.0f;
            std::vector<uint8_t> acts(lg::act_buffer_bytes(c.t, c.K, T, prec));
            lg::prepare_acts(c.t, x.data(), c.K, T, acts.data(), prec);
            std::vector<float> ys(static_cast<size_t>(T * n_rows)), yp(ys.size(), -1.0f);
            lg::matmul_scalar(c.t, W.data(), c.K, 0, n_rows, acts.data(), x.data(), T, ys.data(), n_rows);
            lg::matmul_packed(c.t, P.data(), c.K, 0, n_rows, acts.data(), x.data(), T, yp.data(), n_rows);
            const int bad = std::memcmp(ys.data(), yp.data(), ys.size() * 4) != 0;
            if (bad) std::printf("%-5s K=%lld %s extremes packed MISMATCH\n", lg::ggml_type_name(c.t),
                                 static_cast<long long>(c.K), lg::act_precision_name(prec));
            failures += bad;
            ++checked;
        }
    }
    std::printf("packed: %d checked, %s\n", checked, failures ? "MISMATCH" : "ok");
    return failures;
}

}  // namespace

int main() {
    const std::vector<TypeCase> cases = {
        {GGMLType::Q4_0, 32, 18, {0}}, {GGMLType::Q4_1, 32, 20, {0, 2}}, {GGMLType::Q5_0, 32, 22, {0}},
        {GGMLType::Q5_1, 32, 24, {0, 2}}, {GGMLType::Q8_0, 32, 34, {0}}, {GGMLType::Q4_K, 256, 144, {0, 2}},
        {GGMLType::Q5_K, 256, 176, {0, 2}}, {GGMLType::Q6_K, 256, 210, {208}},
    };
    std::mt19937 rng(1234);
    std::normal_distribution<float> normal;
    const int64_t n_rows = 13;  // three row-lane groups of four and one row for the reducing kernel
    const int T = 40;  // q8x2: 80 records, more than one pass of every row-lane kernel (RL_MAX_RECORDS)
    int failures = 0;
    std::printf("simd: %s\n", lg::quant_simd_name());
    for (int64_t K : {768, 864})
    for (auto prec : {lg::ActPrecision::Q8, lg::ActPrecision::Q8X2})
    for (const auto& c : cases) {
        if (K % c.be) continue;
        std::vector<uint8_t> W(static_cast<size_t>(n_rows * K / c.be * c.bb));
        for (auto& v : W) v = static_cast<uint8_t>(rng() & 0xff);
        for (size_t blk = 0; blk < W.size() / c.bb; ++blk)
            for (int off : c.fp16_offsets) {
                uint16_t h = f32_to_f16_small(normal(rng) * 0.01f);
                std::memcpy(&W[blk * c.bb + off], &h, 2);
            }
        std::vector<float> x(static_cast<size_t>(T * K));
        for (auto& v : x) v = normal(rng);
        // Block 0 of vector 0 has max 127, so x * id is exact and .5 ties reach the rounding.
        const float ties[] = {127.0f, 2.5f, -3.5f, 0.5f, -0.5f, 126.5f};
        std::memcpy(x.data(), ties, sizeof(ties));
        std::vector<uint8_t> acts(lg::act_buffer_bytes(c.t, K, T, prec));
        lg::prepare_acts(c.t, x.data(), K, T, acts.data(), prec);
        const int per = prec == lg::ActPrecision::Q8X2 ? 2 : 1;
        {  // the q8 values against a plain loop (round half to even)
            const lg::ActLayout L = lg::act_layout(c.t, K);
            int badq = 0;
            for (int t = 0; t < T; ++t)
                for (int64_t b = 0; b < K / L.ablk; ++b) {
                    const float* xb = x.data() + t * K + b * L.ablk;
                    float amax = 0.0f;
                    for (int i = 0; i < L.ablk; ++i) amax = std::fmax(amax, std::fabs(xb[i]));
                    const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
                    const uint8_t* rec = acts.data() + 64 + t * per * L.stride;  // past the header
                    const int8_t* q = reinterpret_cast<const int8_t*>(rec) + b * L.ablk;
                    for (int i = 0; i < L.ablk; ++i)
                        badq += q[i] != static_cast<int8_t>(std::fmin(127.0f, std::fmax(-127.0f, std::nearbyint(xb[i] * id))));
                    float d;
                    std::memcpy(&d, rec + L.d_off + 4 * b, 4);
                    badq += d != amax / 127.0f;
                }
            if (badq) std::printf("%-5s prepare_acts MISMATCH (%d)\n", lg::ggml_type_name(c.t), badq);
            failures += badq != 0;
        }
        std::vector<float> ys(static_cast<size_t>(T * n_rows)), yv(ys.size());
        lg::matmul_scalar(c.t, W.data(), K, 0, n_rows, acts.data(), x.data(), T, ys.data(), n_rows);
        lg::matmul(c.t, W.data(), K, 0, n_rows, acts.data(), x.data(), T, yv.data(), n_rows);
        int bad = 0;
        for (size_t i = 0; i < ys.size(); ++i) bad += std::memcmp(&ys[i], &yv[i], 4) != 0;
        for (int Tn : {1, 3, 8}) {  // batch invariance: a prefix of the vectors gives the same bits
            std::vector<uint8_t> a(lg::act_buffer_bytes(c.t, K, Tn, prec));
            lg::prepare_acts(c.t, x.data(), K, Tn, a.data(), prec);
            std::vector<float> y(static_cast<size_t>(Tn * n_rows));
            lg::matmul(c.t, W.data(), K, 0, n_rows, a.data(), x.data(), Tn, y.data(), n_rows);
            for (size_t i = 0; i < y.size(); ++i) bad += std::memcmp(&y[i], &yv[i], 4) != 0;
        }
        std::printf("%-5s K=%lld %s %s (y[0][0] = %g)\n", lg::ggml_type_name(c.t), static_cast<long long>(K),
                    per == 2 ? "q8x2" : "q8  ", bad ? "MISMATCH" : "ok", yv[0]);
        failures += bad != 0;
    }
    failures += check_variants(rng);
    failures += check_packed(rng);
    return failures ? 1 : 0;
}

// The loops of ops.h: RoPE tables, RMSNorm, SiLU and softmax. Built with
// -fno-trapping-math (CMakeLists.txt) so the exp loops vectorize; results do not change.
#include "ops.h"

namespace lg {

void rope_frequencies(double base, int hd, double* theta) {
    for (int i = 0; i < hd / 2; i++) theta[i] = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(hd));
}

void fill_rope_row(const double* theta, int hd, int64_t rot, float* c, float* s) {
    for (int i = 0; i < hd / 2; i++) {
        const double ang = static_cast<double>(rot) * theta[i];
        c[i] = static_cast<float>(std::cos(ang));
        s[i] = static_cast<float>(std::sin(ang));
    }
}

void rmsnorm(float* out, const float* x, const float* w, int n, float eps) {
    float acc[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) acc[j] += x[i + j] * x[i + j];
    for (; i < n; i++) acc[i % LANES] += x[i] * x[i];
    float inv = 1.0f / std::sqrt(reduce_lanes<LANES>(acc) / n + eps);
    for (i = 0; i < n; i++) out[i] = x[i] * inv * w[i];
}

// In blocks of 16 with a fixed trip count, so the compiler vectorizes exp_approx (the plain loops
// stayed scalar); the tail goes one by one. Which path an element takes depends only on its index
// and n, never on the chunk's token count, so batched and one-token forwards give the same bits.
static void exp_inplace(float* __restrict s, int n) {
    int p = 0;
    for (; p + 16 <= n; p += 16)
        for (int j = 0; j < 16; j++) s[p + j] = exp_approx(s[p + j]);
    for (; p < n; p++) s[p] = exp_approx(s[p]);
}

void silu_mul(float* __restrict g, const float* __restrict u, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) g[i + j] = g[i + j] / (1.0f + exp_approx(-g[i + j])) * u[i + j];
    for (; i < n; i++) g[i] = g[i] / (1.0f + exp_approx(-g[i])) * u[i];
}

float softmax_exp(float* s, int n) {
    float mx[LANES], sm[LANES];
    for (int u = 0; u < LANES; u++) mx[u] = -INFINITY;
    int p = 0;
    for (; p + LANES <= n; p += LANES)
        for (int u = 0; u < LANES; u++) mx[u] = s[p + u] > mx[u] ? s[p + u] : mx[u];
    for (; p < n; p++) mx[p % LANES] = s[p] > mx[p % LANES] ? s[p] : mx[p % LANES];
    float m = mx[0];
    for (int u = 1; u < LANES; u++) m = mx[u] > m ? mx[u] : m;
    for (p = 0; p < n; p++) s[p] -= m;
    exp_inplace(s, n);
    for (int u = 0; u < LANES; u++) sm[u] = 0.0f;
    for (p = 0; p + LANES <= n; p += LANES)
        for (int u = 0; u < LANES; u++) sm[u] += s[p + u];
    for (; p < n; p++) sm[p % LANES] += s[p];
    return 1.0f / reduce_lanes<LANES>(sm);
}

}  // namespace lg

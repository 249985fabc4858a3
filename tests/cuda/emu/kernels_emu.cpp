// Runs native/cuda's matmul kernels on the host (emu_host.h): the one-token dp4a kernel token by token,
// the 8-token dp4a kernel and the int8 tensor-core kernel over all T, on weights and activations from a
// file, and writes the three outputs; or ("norm") the fused RMSNorm + activation quantizer; or ("attn")
// the K/V store and attention kernels. Usage: see main and tests/cuda/test_kernels_emulated.py.
#define LG_CUDA_HOST_EMULATION 1
#include "emu_host.h"

#include "../../../native/cuda/matmul.cu"
#include "../../../native/cuda/matmul_mma.cu"
#include "../../../native/cuda/attention.cu"

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace lg::cuda {
LaunchOpts& launch_opts() {  // backend.cu's, which this build leaves out
    static LaunchOpts o;
    return o;
}
}  // namespace lg::cuda

using namespace lg::cuda;

template <class F>
static void run_grid(dim3 grid, int threads, F kernel_call, size_t dynamic_shared_bytes = 0) {
    blockDim = dim3(threads);
    gridDim = grid;
    for (unsigned bz = 0; bz < grid.z; bz++)
        for (unsigned by = 0; by < grid.y; by++)
            for (unsigned bx = 0; bx < grid.x; bx++) {
                EmuBlock blk{};
                std::barrier<> bb(threads);
                std::vector<float> dyn(dynamic_shared_bytes / sizeof(float) + 1);
                blk.block = &bb;
                blk.dynamic_shared = dyn.data();
                for (int w = 0; w < (threads + WARP - 1) / WARP; w++) blk.warp[w] = new std::barrier<>(WARP);
                g_emu = &blk;
                std::vector<std::thread> th;
                for (int t = 0; t < threads; t++)
                    th.emplace_back([&, t] {
                        threadIdx = make_uint3(t, 0, 0);
                        blockIdx = make_uint3(bx, by, bz);
                        kernel_call();
                    });
                for (auto& x : th) x.join();
                for (int w = 0; w < (threads + WARP - 1) / WARP; w++) delete blk.warp[w];
            }
}

template <class T>
static void read_into(std::ifstream& f, std::vector<T>& v, size_t n) {
    v.resize(n);
    if (!f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * sizeof(T))))
        throw std::runtime_error("input file too short");
}

template <int TYPE, int PAIR, bool DUAL>
static void run(int rows, int K, int T, int lpr, const char* in, const char* out) {
    const int ablk = act_block(TYPE), units = K / UNIT, kd = K / ablk, R = T * PAIR;
    const int64_t row_bytes = static_cast<int64_t>(K / block_elems(TYPE)) * block_bytes(TYPE);
    std::ifstream f(in, std::ios::binary);
    std::vector<uint8_t> W, W2;
    std::vector<int8_t> q;
    std::vector<float> d, bias;
    std::vector<int32_t> s;
    read_into(f, W, rows * row_bytes);
    if (DUAL) read_into(f, W2, rows * row_bytes);
    read_into(f, q, static_cast<size_t>(R) * K);
    read_into(f, d, static_cast<size_t>(R) * kd);
    read_into(f, s, static_cast<size_t>(R) * units);
    read_into(f, bias, rows);
    W.resize(W.size() + 64);  // the engine's weight slack (ld_words_a2 reads past the last block)
    W2.resize(W2.size() + 64);
    const int epi = DUAL ? static_cast<int>(Epi::SwiGLU) : static_cast<int>(Epi::Store);
    auto segs_for = [&](float* y, int per) {
        MatSegs g{};
        g.s[0] = MatSeg{W.data(), DUAL ? W2.data() : nullptr, y, DUAL ? nullptr : bias.data(), rows, rows,
                        (rows + per - 1) / per};
        g.n = 1;
        return g;
    };
    std::vector<float> y1(static_cast<size_t>(T) * rows), y8(y1.size()), ym(y1.size());
    for (int t = 0; t < T; t++) {  // the decode kernel, one token at a time
        const Acts a{q.data() + static_cast<size_t>(t) * PAIR * K, d.data() + static_cast<size_t>(t) * PAIR * kd,
                     s.data() + static_cast<size_t>(t) * PAIR * units, nullptr, ablk, PAIR};
        const MatSegs g = segs_for(y1.data() + static_cast<size_t>(t) * rows, MATMUL_THREADS / lpr);
        run_grid(dim3(g.s[0].blocks), MATMUL_THREADS,
                 [&] { mm_q_kernel<TYPE, 1, PAIR, DUAL>(g, row_bytes, K, lpr, a, 1, epi, 0); });
    }
    const Acts a{q.data(), d.data(), s.data(), nullptr, ablk, PAIR};
    const MatSegs g8 = segs_for(y8.data(), MATMUL_THREADS / lpr);
    run_grid(dim3(g8.s[0].blocks), MATMUL_THREADS,
             [&] { mm_q_kernel<TYPE, 8, PAIR, DUAL>(g8, row_bytes, K, lpr, a, T, epi, 0); });
    const MatSegs gm = segs_for(ym.data(), MMA_ROWS);
    const int tiles = mma_tiles(T), per = tiles * 8 / PAIR;  // as launch_tiles chooses
    const dim3 grid(gm.s[0].blocks, (T + per - 1) / per);
    if (tiles == 4)
        run_grid(grid, MMA_WARPS * WARP, [&] { mm_mma_kernel<TYPE, PAIR, DUAL, 4>(gm, row_bytes, K, lpr, a, T, epi, 0); });
    else
        run_grid(grid, MMA_WARPS * WARP, [&] { mm_mma_kernel<TYPE, PAIR, DUAL, 2>(gm, row_bytes, K, lpr, a, T, epi, 0); });
    std::ofstream o(out, std::ios::binary);
    for (const auto* v : {&y1, &y8, &ym}) o.write(reinterpret_cast<const char*>(v->data()), v->size() * sizeof(float));
}

template <int TYPE>
static void by_pair(int pair, bool dual, int rows, int K, int T, int lpr, const char* in, const char* out) {
    if (pair == 2 && dual) run<TYPE, 2, true>(rows, K, T, lpr, in, out);
    else if (pair == 2) run<TYPE, 2, false>(rows, K, T, lpr, in, out);
    else if (dual) run<TYPE, 1, true>(rows, K, T, lpr, in, out);
    else run<TYPE, 1, false>(rows, K, T, lpr, in, out);
}

// RMSNorm + quantization of T rows of E values (x, then the norm weights w, from IN): the normalized rows
// and the ablk-block records (q int8, d float, s int32 per 32) to OUT.
static void run_norm(int E, int T, int ablk, int pair, const char* in, const char* out) {
    std::ifstream f(in, std::ios::binary);
    std::vector<float> x, w;
    read_into(f, x, static_cast<size_t>(T) * E);
    read_into(f, w, E);
    const size_t R = static_cast<size_t>(T) * pair;
    std::vector<float> xb(x.size()), d(R * E / ablk);
    std::vector<int8_t> q(R * E);
    std::vector<int32_t> s(R * E / UNIT);
    run_grid(dim3(T), NORM_THREADS, [&] {
        rmsnorm_quant_kernel(x.data(), w.data(), xb.data(), E, 1e-6f, ablk, pair, q.data(), d.data(), s.data());
    });
    std::ofstream o(out, std::ios::binary);
    o.write(reinterpret_cast<const char*>(xb.data()), xb.size() * sizeof(float));
    o.write(reinterpret_cast<const char*>(q.data()), q.size());
    o.write(reinterpret_cast<const char*>(d.data()), d.size() * sizeof(float));
    o.write(reinterpret_cast<const char*>(s.data()), s.size() * sizeof(int32_t));
}

// Attention over a cache of n positions (slot = position; key p written with rotation index p by
// kv_store), then a chunk of T query tokens at positions pos0 .. pos0 + T - 1 = n - 1 with rotation
// indexes rot0 + t, the first n_sink positions sinks: all chunks launched, the cache's every chunk
// launched (the graph's grid), and token by token. IN: k, v [n][kv_dim], q [T][n_head * hd], theta
// [hd / 2] double, rope cos, sin [capacity][hd / 2]. OUT: the three outputs [T][n_head * hd].
static void run_attn(const AttnShape& sh, int n, int T, int pos0, long long rot0, int n_sink, const char* in,
                     const char* out) {
    const int hd = sh.head_dim, kv_dim = sh.n_head_kv * hd, E = sh.n_head * hd, cap = sh.capacity;
    std::ifstream f(in, std::ios::binary);
    std::vector<float> k, v, q, rc, rs;
    std::vector<double> theta;
    read_into(f, k, static_cast<size_t>(n) * kv_dim);
    read_into(f, v, static_cast<size_t>(n) * kv_dim);
    read_into(f, q, static_cast<size_t>(T) * E);
    read_into(f, theta, hd / 2);
    read_into(f, rc, static_cast<size_t>(cap) * hd / 2);
    read_into(f, rs, static_cast<size_t>(cap) * hd / 2);
    std::vector<float> kc(static_cast<size_t>(sh.n_head_kv) * cap * hd);
    std::vector<__half> vc(kc.size());
    std::vector<int32_t> slots(cap);
    for (int p = 0; p < cap; p++) slots[p] = p;
    ChunkMeta m{n, 0, n, 0, n_sink, 0, 0};
    run_grid(dim3(n, sh.n_head_kv), hd < 128 ? hd : 128,
             [&] { kv_store_kernel(sh, kc.data(), vc.data(), k.data(), v.data(), theta.data(), slots.data(), &m); });
    std::vector<float> pacc(static_cast<size_t>(T) * sh.n_head * sh.max_chunks * hd);
    std::vector<float> pml(static_cast<size_t>(T) * sh.n_head * sh.max_chunks * 2);
    auto attend = [&](const ChunkMeta& cm, int tokens, int n_chunks, const float* qq, float* o) {
        run_grid(dim3(n_chunks, sh.n_head_kv, tokens), ATT_THREADS, [&] {
            attn_partial_kernel(sh, kc.data(), vc.data(), qq, slots.data(), theta.data(), rc.data(), rs.data(), &cm,
                                pacc.data(), pml.data());
        }, attention_smem_bytes(sh));
        run_grid(dim3(sh.n_head, tokens), COMBINE_THREADS,
                 [&] { attn_combine_kernel(sh, &cm, pacc.data(), pml.data(), o); }, 2 * sizeof(float) * sh.max_chunks);
    };
    std::vector<float> oa(static_cast<size_t>(T) * E), ob(oa.size()), oc(oa.size());
    const ChunkMeta cm{T, pos0, n, 0, n_sink, 0, rot0};
    attend(cm, T, (n + ATT_CHUNK - 1) / ATT_CHUNK, q.data(), oa.data());
    attend(cm, T, sh.max_chunks, q.data(), ob.data());
    for (int t = 0; t < T; t++) {
        const ChunkMeta c1{1, pos0 + t, pos0 + t + 1, 0, n_sink, 0, rot0 + t};
        attend(c1, 1, (pos0 + t + 1 + ATT_CHUNK - 1) / ATT_CHUNK, q.data() + static_cast<size_t>(t) * E,
               oc.data() + static_cast<size_t>(t) * E);
    }
    std::ofstream o(out, std::ios::binary);
    for (const auto* x : {&oa, &ob, &oc}) o.write(reinterpret_cast<const char*>(x->data()), x->size() * sizeof(float));
}

int main(int argc, char** argv) {
    if (argc == 14 && std::string(argv[1]) == "attn") {
        const int n_head = std::stoi(argv[2]), n_head_kv = std::stoi(argv[3]), hd = std::stoi(argv[4]);
        const int cap = std::stoi(argv[6]);
        const AttnShape sh{n_head, n_head_kv, hd, cap, std::stoi(argv[5]) != 0, (cap + ATT_CHUNK - 1) / ATT_CHUNK};
        try {
            run_attn(sh, std::stoi(argv[7]), std::stoi(argv[8]), std::stoi(argv[9]), std::stoll(argv[10]),
                     std::stoi(argv[11]), argv[12], argv[13]);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "%s\n", e.what());
            return 1;
        }
        return 0;
    }
    if (argc == 8 && std::string(argv[1]) == "norm") {
        try {
            run_norm(std::stoi(argv[2]), std::stoi(argv[3]), std::stoi(argv[4]), std::stoi(argv[5]), argv[6], argv[7]);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "%s\n", e.what());
            return 1;
        }
        return 0;
    }
    if (argc != 10) {
        std::fprintf(stderr, "usage: %s TYPE PAIR DUAL ROWS K T LPR IN OUT | norm E T ABLK PAIR IN OUT\n", argv[0]);
        return 2;
    }
    const int type = std::stoi(argv[1]), pair = std::stoi(argv[2]), dual = std::stoi(argv[3]);
    const int rows = std::stoi(argv[4]), K = std::stoi(argv[5]), T = std::stoi(argv[6]), lpr = std::stoi(argv[7]);
    try {
        switch (type) {
            case W_Q4_K: by_pair<W_Q4_K>(pair, dual, rows, K, T, lpr, argv[8], argv[9]); break;
            case W_Q6_K: by_pair<W_Q6_K>(pair, dual, rows, K, T, lpr, argv[8], argv[9]); break;
            case W_Q5_0: by_pair<W_Q5_0>(pair, dual, rows, K, T, lpr, argv[8], argv[9]); break;
            case W_Q8_0: by_pair<W_Q8_0>(pair, dual, rows, K, T, lpr, argv[8], argv[9]); break;
            case W_Q4_1: by_pair<W_Q4_1>(pair, dual, rows, K, T, lpr, argv[8], argv[9]); break;
            case W_Q4_0: by_pair<W_Q4_0>(pair, dual, rows, K, T, lpr, argv[8], argv[9]); break;
            default: std::fprintf(stderr, "type %d not run here\n", type); return 2;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
    return 0;
}

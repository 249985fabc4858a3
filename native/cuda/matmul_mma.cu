// int8 tensor-core products for chunks of T > 1 tokens (launch_opts().mma): the same values as the dp4a
// kernel of matmul.cu, bit for bit (its accumulation order, slot by slot). Knows nothing about layers;
// see matmul.cuh for the contract and matmul_segs.cuh for the launch.
#include "matmul_segs.cuh"
#include "qdot.cuh"

namespace lg {
namespace cuda {

// int8 mma (sm_80+): a warp multiplies 16 weight rows by one 32-element unit of 8 activation records
// (m16n8k32; Q6_K takes its two 16-element halves apart, m16n8k16, since they have their own scales).
// Fragments (PTX ISA, "mma.m16n8k32", .s8): lane = 4 g + k holds of A words k and k + 4 of rows g and
// g + 8, of B words k and k + 4 of column g, of C rows g and g + 8 at columns 2k and 2k + 1.
__device__ __forceinline__ void mma_k32(int (&c)[4], int a0, int a1, int a2, int a3, int b0, int b1) {
#if defined(LG_CUDA_HOST_EMULATION)  // tests/cuda/emu: these kernels compiled for the host, mma by its PTX semantics
    const int a[4] = {a0, a1, a2, a3}, b[2] = {b0, b1};
    emu_mma(c, a, 4, b, 2);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
}
__device__ __forceinline__ void mma_k16(int (&c)[4], int a0, int a1, int b0) {
#if defined(LG_CUDA_HOST_EMULATION)
    const int a[2] = {a0, a1}, b[1] = {b0};
    emu_mma(c, a, 2, b, 1);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a0), "r"(a1), "r"(b0));
#endif
}

// One weight unit of this lane's two rows (g, g + 8): scales and its A words.
template <int TYPE>
struct RowPairUnit {
    UnitScale s[2];
    int lo[2], hi[2];
    __device__ __forceinline__ void load(const uint8_t* wA, const uint8_t* wB, int u, int k) {
        s[0] = unit_scale<TYPE>(wA, u);
        s[1] = unit_scale<TYPE>(wB, u);
        unit_words2<TYPE>(wA, u, k, lo[0], hi[0]);
        unit_words2<TYPE>(wB, u, k, lo[1], hi[1]);
    }
    // The integer dot sc0 * dot(0..15) + sc1 * dot(16..31) of C element i (row i / 2) for B words b0, b1:
    // exactly the dp4a kernel's w.s.sc0 * lo + w.s.sc1 * hi.
    __device__ __forceinline__ void dots(int b0, int b1, int (&iv)[4]) const {
        int c[4] = {0, 0, 0, 0};
        if constexpr (TYPE == W_Q6_K) {
            int h[4] = {0, 0, 0, 0};
            mma_k16(c, lo[0], lo[1], b0);
            mma_k16(h, hi[0], hi[1], b1);
#pragma unroll
            for (int i = 0; i < 4; i++) iv[i] = s[i / 2].sc0 * c[i] + s[i / 2].sc1 * h[i];
        } else {  // sc0 == sc1: sc * lo + sc * hi == sc * (lo + hi) in integers
            mma_k32(c, lo[0], lo[1], hi[0], hi[1], b0, b1);
#pragma unroll
            for (int i = 0; i < 4; i++) iv[i] = s[i / 2].sc0 * c[i];
        }
    }
};

// Weight-stationary over tensor cores: block = MMA_ROWS rows x TILES * 8 activation records (grid.y
// over the tokens). Row r, token t: for slot l = 0..L-1 a chain over units l, l + L, ... from zero,
// each unit's records in order (unit_dot's fmaf steps), the slots then added in order from zero:
// what mm_q_kernel's lanes and reduce_rows compute, so batched and one-token products agree bit
// for bit. DUAL as in mm_q_kernel.
template <int TYPE, int PAIR, bool DUAL, int TILES>
__global__ void __launch_bounds__(MMA_WARPS * WARP)
mm_mma_kernel(MatSegs segs, int64_t row_bytes, int K, int L, Acts a, int T, int epi, int prefetch) {
    constexpr int TPT = 8 / PAIR;   // tokens per 8-column tile
    constexpr int NACC = 4 / PAIR;  // accumulators per tile and lane: rows x tokens of its C elements
    constexpr bool MINS = TYPE == W_Q4_K || TYPE == W_Q4_1;
    int blk;
    const MatSeg S = find_seg(segs, &blk);
    const int warp = threadIdx.x / WARP, lane = threadIdx.x % WARP, g = lane >> 2, k = lane & 3;
    if (prefetch && blockIdx.y == 0 && warp == 0) prefetch_block_rows(S, DUAL, blk * MMA_ROWS, MMA_ROWS, row_bytes);
    pdl_wait();
    pdl_trigger();
    const int rbase = blk * MMA_ROWS + warp * 16;
    if (rbase >= S.n_rows) return;  // the whole warp
    const int rA = rbase + g, rB = rbase + g + 8;
    const uint8_t* wA = S.W + static_cast<int64_t>(rA < S.n_rows ? rA : rbase) * row_bytes;
    const uint8_t* wB = S.W + static_cast<int64_t>(rB < S.n_rows ? rB : rbase) * row_bytes;
    const uint8_t* w2A = DUAL ? S.W2 + (wA - S.W) : nullptr;
    const uint8_t* w2B = DUAL ? S.W2 + (wB - S.W) : nullptr;
    const int units = K / UNIT, ublk = a.ablk / UNIT, kd = K / a.ablk;
    const int tb = blockIdx.y * TILES * TPT;
    // B column g of tile j reads activation record bri[j]; C columns 2k + c are records cri[j][c].
    // Columns past T read the last token's records instead: a column of C depends only on its own
    // column of B, and those are never stored. No lane branches around the mma (.aligned).
    int bri[TILES], cri[TILES][2];
#pragma unroll
    for (int j = 0; j < TILES; j++) {
        const int tok = min(tb + j * TPT + g / PAIR, T - 1);
        bri[j] = tok * PAIR + g % PAIR;
#pragma unroll
        for (int c = 0; c < 2; c++) {
            const int col = 2 * k + c, ct = min(tb + j * TPT + col / PAIR, T - 1);
            cri[j][c] = ct * PAIR + col % PAIR;
        }
    }
    float run[TILES][NACC], run2[TILES][NACC];
#pragma unroll
    for (int j = 0; j < TILES; j++)
#pragma unroll
        for (int i = 0; i < NACC; i++) run[j][i] = run2[j][i] = 0.0f;

    for (int l = 0; l < L; l++) {
        float acc[TILES][NACC], acc2[TILES][NACC];
#pragma unroll
        for (int j = 0; j < TILES; j++)
#pragma unroll
            for (int i = 0; i < NACC; i++) acc[j][i] = acc2[j][i] = 0.0f;
        for (int u = l; u < units; u += L) {
            RowPairUnit<TYPE> W, W2;
            W.load(wA, wB, u, k);
            if constexpr (DUAL) W2.load(w2A, w2B, u, k);
#pragma unroll
            for (int j = 0; j < TILES; j++) {
                const int8_t* ap = a.q + static_cast<int64_t>(bri[j]) * K + u * UNIT + 4 * k;
                const int b0 = *reinterpret_cast<const int*>(ap), b1 = *reinterpret_cast<const int*>(ap + 16);
                float dx[2];
                int sx[2];
#pragma unroll
                for (int c = 0; c < 2; c++) {
                    dx[c] = a.d[static_cast<int64_t>(cri[j][c]) * kd + u / ublk];
                    sx[c] = MINS ? a.s[static_cast<int64_t>(cri[j][c]) * units + u] : 0;
                }
                int iv[4], iv2[4];
                W.dots(b0, b1, iv);
                if constexpr (DUAL) W2.dots(b0, b1, iv2);
#pragma unroll
                for (int i = 0; i < 4; i++) {  // PAIR 2: row i/2, records 0 then 1 of one token; PAIR 1: 4 pairs
                    const int r = i / 2, c = i % 2, ai = PAIR == 2 ? r : i;
                    const UnitScale& sc = W.s[r];
                    acc[j][ai] = fmaf(sc.f1 * dx[c], static_cast<float>(iv[i]), acc[j][ai]);
                    if constexpr (MINS) acc[j][ai] = fmaf(sc.f2 * dx[c], static_cast<float>(sc.mn * sx[c]), acc[j][ai]);
                    if constexpr (DUAL) {
                        const UnitScale& s2 = W2.s[r];
                        acc2[j][ai] = fmaf(s2.f1 * dx[c], static_cast<float>(iv2[i]), acc2[j][ai]);
                        if constexpr (MINS)
                            acc2[j][ai] = fmaf(s2.f2 * dx[c], static_cast<float>(s2.mn * sx[c]), acc2[j][ai]);
                    }
                }
            }
        }
#pragma unroll
        for (int j = 0; j < TILES; j++)
#pragma unroll
            for (int i = 0; i < NACC; i++) {
                run[j][i] += acc[j][i];
                if constexpr (DUAL) run2[j][i] += acc2[j][i];
            }
    }
#pragma unroll
    for (int j = 0; j < TILES; j++)
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int r = i / 2, c = i % 2, ai = PAIR == 2 ? r : i;
            if (PAIR == 2 && c == 1) continue;  // both records of the token went into one accumulator
            const int row = r ? rB : rA, tok = tb + j * TPT + (2 * k + c) / PAIR;
            if (row >= S.n_rows || tok >= T) continue;
            const int64_t idx = static_cast<int64_t>(tok) * S.ldy + row;
            if constexpr (DUAL) S.y[idx] = silu_mul(run[j][ai], run2[j][ai]);
            else epilogue(S.y, idx, run[j][ai], S.bias, row, epi);
        }
}

template <int TYPE, int PAIR, bool DUAL>
static void launch_tiles(const MatSegs& segs, int64_t row_bytes, int K, int L, const Acts& a, int T, Epi epi, int pf,
                         cudaStream_t st) {
    const int tiles = mma_tiles(T), per = tiles * 8 / PAIR;  // tokens per block row
    const dim3 g(total_blocks(segs), (T + per - 1) / per), b(MMA_WARPS * WARP);
    if (tiles == 4)
        launch("mm_mma_kernel", mm_mma_kernel<TYPE, PAIR, DUAL, 4>, g, b, 0, st, segs, row_bytes, K, L, a, T,
               static_cast<int>(epi), pf);
    else
        launch("mm_mma_kernel", mm_mma_kernel<TYPE, PAIR, DUAL, 2>, g, b, 0, st, segs, row_bytes, K, L, a, T,
               static_cast<int>(epi), pf);
}

template <int TYPE>
static void launch_type(bool dual, const MatSegs& segs, int64_t row_bytes, int K, int L, const Acts& a, int T, Epi epi,
                        int pf, cudaStream_t st) {
    if (a.pair == 2 && dual) launch_tiles<TYPE, 2, true>(segs, row_bytes, K, L, a, T, epi, pf, st);
    else if (a.pair == 2) launch_tiles<TYPE, 2, false>(segs, row_bytes, K, L, a, T, epi, pf, st);
    else if (dual) launch_tiles<TYPE, 1, true>(segs, row_bytes, K, L, a, T, epi, pf, st);
    else launch_tiles<TYPE, 1, false>(segs, row_bytes, K, L, a, T, epi, pf, st);
}

void launch_mma(int type, bool dual, const MatSegs& segs, int64_t row_bytes, int K, int L, const Acts& a, int T,
                Epi epi, bool prefetch, cudaStream_t st) {
    if (a.pair != 1 && a.pair != 2)
        throw CudaError("matmul: activations with " + std::to_string(a.pair) + " records per vector");
    const int pf = prefetch ? 1 : 0;
    switch (type) {
        case W_Q4_K: return launch_type<W_Q4_K>(dual, segs, row_bytes, K, L, a, T, epi, pf, st);
        case W_Q6_K: return launch_type<W_Q6_K>(dual, segs, row_bytes, K, L, a, T, epi, pf, st);
        case W_Q5_0: return launch_type<W_Q5_0>(dual, segs, row_bytes, K, L, a, T, epi, pf, st);
        case W_Q8_0: return launch_type<W_Q8_0>(dual, segs, row_bytes, K, L, a, T, epi, pf, st);
        case W_Q4_1: return launch_type<W_Q4_1>(dual, segs, row_bytes, K, L, a, T, epi, pf, st);
        case W_Q4_0: return launch_type<W_Q4_0>(dual, segs, row_bytes, K, L, a, T, epi, pf, st);
        default: throw CudaError("matmul: no tensor-core kernel for weight type id " + std::to_string(type));
    }
}

}  // namespace cuda
}  // namespace lg

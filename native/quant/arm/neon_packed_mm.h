// The i8mm variant's packed kernels (smmla), a part of neon_packed.cpp: it includes this file inside its
// namespace, after the helpers the kernels share with the dotprod ones (LegacyPk, h2f4, side_rows, fresh,
// static_for), and only when LG_NEON_I8MM (neon_i8mm.cpp). Not a header of its own.

// ---- smmla kernels (the i8mm variant) over the row-pair layout (quant/repack.cpp: chunk_at) --------------
// smmla (vmmlaq_s32) multiplies a 2x8 int8 matrix by the transpose of another: with the weights' rows a, b (one
// 16-byte chunk of the row-pair layout: 8 bytes of row a, then the same 8 bytes of row b) and two records t,
// t' (8 values of each, side by side: the interleaved activations below), it adds the four dots in the lanes
// [a.t, a.t', b.t, b.t']: 32 multiply-adds, where a by-element sdot does 16. So a group of four rows and a pair
// of records keeps its sums in two vectors, rows 0-1 and rows 2-3, in that lane order; the rows' scales
// come as [s0, s0, s1, s1] / [s2, s2, s3, s3] and the records' as [x, x', x, x'], built once per block and
// pair, and the lanes are unscrambled (uzp) only when the tile's results are stored. The integer sums are
// the exact ones of the dotprod kernels and every float step is the same lane by lane, so results stay
// bit-identical. A single record (an odd record count's last tile; never at q8x2, two records a token) sits
// in the pair buffer twice, and there a plain sdot (not smmla, which would compute every dot twice) against
// a row-pair chunk gives [a.lo, a.hi, b.lo, b.hi], a row's dots over the first and last four of eight
// values: the dotprod kernels' multiply work. The lanes fold to rows (addp) when a block's sums are converted.

// Which types have smmla kernels; the others keep the default layout and the kernels above (by-element sdot).
inline bool mm_type(GGMLType wt) { return act_kind(wt) != ActKind::None; }

// Records (t, t') floats at p[0], p[1] as [p0, p1, p0, p1]; one record (ONE): p0 in every lane.
template <bool ONE>
inline float32x4_t pair_f32(const float* p) {
    if constexpr (ONE) {
        return vld1q_dup_f32(p);
    } else {
        const float32x2_t h = vld1_f32(p);
        return vcombine_f32(h, h);
    }
}
inline float32x4_t rows01(float32x4_t v) { return vzip1q_f32(v, v); }  // [v0, v0, v1, v1]
inline float32x4_t rows23(float32x4_t v) { return vzip2q_f32(v, v); }  // [v2, v2, v3, v3]

// One row-pair chunk w against a pair chunk x: smmla, or for one record (its pair chunk holds it twice) sdot.
template <bool ONE>
inline int32x4_t mmla(int32x4_t acc, int8x16_t w, int8x16_t x) {
    if constexpr (ONE) return vdotq_s32(acc, w, x);
    else return vmmlaq_s32(acc, w, x);
}

// acc + the products of four weight chunks w0, w2, w4, w6 (a row pair, 32 values) with four pair chunks x.
template <bool ONE>
inline int32x4_t mm32(int32x4_t acc, int8x16_t w0, int8x16_t w1, int8x16_t w2, int8x16_t w3, const int8_t* x) {
    acc = mmla<ONE>(acc, w0, vld1q_s8(x));
    acc = mmla<ONE>(acc, w1, vld1q_s8(x + 16));
    acc = mmla<ONE>(acc, w2, vld1q_s8(x + 32));
    return mmla<ONE>(acc, w3, vld1q_s8(x + 48));
}

// The tile's results, pair u's two vectors (rows 0-1, rows 2-3) as out[2u] and out[2u + 1]: one uzp each;
// one record: acc[0][0], rows in lanes.
template <int NT>
inline void store_pairs(const float32x4_t (*acc)[2], float (*out)[4]) {
    if (NT == 1) {
        vst1q_f32(out[0], acc[0][0]);
        return;
    }
    for (int u = 0; u < NT / 2; ++u) {
        vst1q_f32(out[2 * u], vuzp1q_f32(acc[u][0], acc[u][1]));
        vst1q_f32(out[2 * u + 1], vuzp2q_f32(acc[u][0], acc[u][1]));
    }
}

// Legacy 32-blocks, one group against the NT records of the tile (NT = 1: sdot, see above): packed_legacy's
// decode, lanes and magic-number converts; xp: the tile's interleaved activations, pair u at xp + u * xs.
template <GGMLType WT, int NT>
__attribute__((noinline)) void mm_legacy(const uint8_t* G, int64_t nb, const int8_t* xp, int64_t xs, const float* side,
                                         float (*out)[4]) {
    using P = LegacyPk<WT>;
    constexpr int NP = (NT + 1) / 2, SR = side_rows(WT);
    constexpr bool ONE = NT == 1;
    float32x4_t lanes[NP][2][L_LANES];
    const uint8_t* blk = G;
    const float32x4_t magic_f = vdupq_n_f32(P::MAGIC_F);
    for (int l = 0; l < L_LANES; ++l) {
        float32x4_t acc[NP][2];
        for (int u = 0; u < NP; ++u) acc[u][0] = acc[u][1] = vdupq_n_f32(0.0f);
        for (int64_t b = l; b < nb; b += L_LANES, blk += P::PB) {
            const float32x4_t dw = h2f4(blk), dw01 = rows01(dw), dw23 = rows23(dw);
            int8x16_t w[8];  // w[2i]: rows 0-1, values 8i..8i+7; w[2i + 1]: rows 2-3
            if constexpr (P::q4) {
                #pragma GCC unroll 4
                for (int c = 0; c < 4; ++c) {
                    const int8x16_t q = vld1q_s8(reinterpret_cast<const int8_t*>(blk + P::QOFF + 16 * c));
                    w[c] = vshlq_n_s8(q, 4);
                    w[4 + c] = vreinterpretq_s8_u8(vandq_u8(vreinterpretq_u8_s8(q), vdupq_n_u8(0xf0)));
                }
            } else if constexpr (P::q5) {
                const uint8x16_t hb = vld1q_u8(blk + P::QOFF);
                #pragma GCC unroll 4
                for (int c = 0; c < 4; ++c) {
                    const uint8x16_t q = vld1q_u8(blk + P::QOFF + 16 + 16 * c);
                    const uint8x16_t lo = vtstq_u8(hb, vdupq_n_u8(static_cast<uint8_t>(1 << c)));
                    const uint8x16_t hi = vtstq_u8(hb, vdupq_n_u8(static_cast<uint8_t>(16 << c)));
                    w[c] = vreinterpretq_s8_u8(vsliq_n_u8(q, lo, 4));
                    w[4 + c] = vreinterpretq_s8_u8(vsriq_n_u8(hi, q, 4));
                }
            } else {
                #pragma GCC unroll 8
                for (int c = 0; c < 8; ++c) w[c] = vld1q_s8(reinterpret_cast<const int8_t*>(blk + 8 + 16 * c));
            }
            const float* sd = side + b * SR * NT;
            if constexpr (ONE) {  // lanes [a.lo, a.hi, b.lo, b.hi]: the start in the lo lanes, addp folds to rows
                const int8_t* x = xp + b * 2 * QK32;
                const int32x4_t s0 = vreinterpretq_s32_u64(
                    vmovl_u32(vld1_dup_u32(P::min ? reinterpret_cast<const uint32_t*>(sd + 2 * NT) : &P::MAGIC_U)));
                const int32x4_t s = vpaddq_s32(mm32<true>(s0, w[0], w[2], w[4], w[6], x),
                                               mm32<true>(s0, w[1], w[3], w[5], w[7], x));
                const float32x4_t dx = vld1q_dup_f32(sd);
                acc[0][0] = vfmaq_f32(acc[0][0], vmulq_f32(dw, dx), vsubq_f32(vreinterpretq_f32_s32(s), magic_f));
                if constexpr (P::min) acc[0][0] = vfmaq_f32(acc[0][0], vmulq_f32(h2f4(blk + 8), dx), vld1q_dup_f32(sd + NT));
                continue;
            }
            static_for<NP>([&](auto uc) {
                constexpr int u = uc;
                const int8_t* x = xp + u * xs + b * 2 * QK32;
                const int32x4_t s0 = P::min ? vreinterpretq_s32_f32(pair_f32<ONE>(sd + 2 * NT + 2 * u)) : dup_gpr(P::MAGIC);
                const int32x4_t s01 = mm32<false>(s0, w[0], w[2], w[4], w[6], x);
                const int32x4_t s23 = mm32<false>(s0, w[1], w[3], w[5], w[7], x);
                const float32x4_t dx = pair_f32<ONE>(sd + 2 * u);
                acc[u][0] = vfmaq_f32(acc[u][0], vmulq_f32(dw01, dx), vsubq_f32(vreinterpretq_f32_s32(s01), magic_f));
                acc[u][1] = vfmaq_f32(acc[u][1], vmulq_f32(dw23, dx), vsubq_f32(vreinterpretq_f32_s32(s23), magic_f));
                if constexpr (P::min) {
                    const float32x4_t mw = h2f4(blk + 8), fs = pair_f32<ONE>(sd + NT + 2 * u);
                    acc[u][0] = vfmaq_f32(acc[u][0], vmulq_f32(rows01(mw), dx), fs);
                    acc[u][1] = vfmaq_f32(acc[u][1], vmulq_f32(rows23(mw), dx), fs);
                }
            });
        }
        for (int u = 0; u < NP; ++u) lanes[u][0][l] = acc[u][0], lanes[u][1][l] = acc[u][1];
    }
    float32x4_t res[NP][2];
    for (int u = 0; u < NP; ++u)
        for (int h = 0; h < 2; ++h) {  // reduce_lanes: (l, l+4), then (l, l+2), then (l, l+1)
            for (int w = L_LANES / 2; w >= 1; w /= 2)
                for (int l = 0; l < w; ++l) lanes[u][h][l] = vaddq_f32(lanes[u][h][l], lanes[u][h][l + w]);
            res[u][h] = lanes[u][h][0];
        }
    store_pairs<NT>(res, out);
}

// A packed Q4_K/Q5_K block's mins (and, Q5, scales), stored entry 4j + r for sub-block j and row r, gathered
// into two row pairs by sub-block: the smmla operands of the block-end mins (and of Q5_K's correction).
template <bool Q5>
inline void q45k_gather(const uint8_t* blk, uint8x16_t m3, int8x16_t& mn01, int8x16_t& mn23, int8x16_t& sc01,
                        int8x16_t& sc23) {
    const uint8x16_t ix01 = {0, 4, 8, 12, 16, 20, 24, 28, 1, 5, 9, 13, 17, 21, 25, 29};
    const uint8x16_t ix23 = {2, 6, 10, 14, 18, 22, 26, 30, 3, 7, 11, 15, 19, 23, 27, 31};
    const uint8x16_t ms = vld1q_u8(blk + 32), hs = vld1q_u8(blk + 48);
    const uint8x16x2_t mn = {{vsliq_n_u8(ms, vandq_u8(vshrq_n_u8(hs, 4), m3), 4),
                              vsliq_n_u8(vshrq_n_u8(ms, 4), vshrq_n_u8(hs, 6), 4)}};
    mn01 = vreinterpretq_s8_u8(vqtbl2q_u8(mn, ix01));
    mn23 = vreinterpretq_s8_u8(vqtbl2q_u8(mn, ix23));
    if constexpr (Q5) {
        const uint8x16_t ls = vld1q_u8(blk + 16);
        const uint8x16x2_t sc = {{vsliq_n_u8(ls, vandq_u8(hs, m3), 4),
                                  vsliq_n_u8(vshrq_n_u8(ls, 4), vandq_u8(vshrq_n_u8(hs, 2), m3), 4)}};
        sc01 = vreinterpretq_s8_u8(vqtbl2q_u8(sc, ix01));
        sc23 = vreinterpretq_s8_u8(vqtbl2q_u8(sc, ix23));
    }
}

// Q4_K / Q5_K (Q5), one group against the tile: packed_q45k's decode, telescoped scale steps (always, one record
// too) and block-end mins; the mins' and Q5_K's sums as smmla too: the mins (scales) as rows x 8 sub-blocks
// against the records' split sums a_j (b_j) side by side.
template <bool Q5, int NT>
__attribute__((noinline)) void mm_q45k(const uint8_t* G, int64_t nb, const int8_t* xp, int64_t xs, const float* side,
                                       float (*out)[4]) {
    constexpr int64_t PB = Q5 ? 704 : 576;
    constexpr int NP = (NT + 1) / 2;
    constexpr bool ONE = NT == 1;
    float32x4_t acc[NP][2];
    for (int u = 0; u < NP; ++u) acc[u][0] = acc[u][1] = vdupq_n_f32(0.0f);
    const uint8x16_t m4 = vdupq_n_u8(0x0f), m3 = vdupq_n_u8(3);
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = G + b * PB;
        int8_t steps[32];  // sc_j - sc_j+1 of entries 4j + r
        {
            const uint8x16_t ls = vld1q_u8(blk + 16), hs = vld1q_u8(blk + 48);
            const int8x16_t sc0 = vreinterpretq_s8_u8(vsliq_n_u8(ls, vandq_u8(hs, m3), 4));
            const int8x16_t sc1 = vreinterpretq_s8_u8(vsliq_n_u8(vshrq_n_u8(ls, 4), vandq_u8(vshrq_n_u8(hs, 2), m3), 4));
            vst1q_s8(steps, vsubq_s8(sc0, vextq_s8(sc0, sc1, 4)));
            vst1q_s8(steps + 16, vsubq_s8(sc1, vextq_s8(sc1, vdupq_n_s8(0), 4)));
        }
        int32x4_t i1[NP][2], run[NP][2];
        for (int u = 0; u < NP; ++u) i1[u][0] = i1[u][1] = run[u][0] = run[u][1] = vdupq_n_s32(0);
        #pragma GCC unroll 1
        for (int p = 0; p < 4; ++p) {
            const int8x8_t s8 = vld1_s8(steps + 8 * p);  // sub-blocks 2p, 2p + 1, rows 0-3 each
            #pragma GCC unroll 2
            for (int half = 0; half < 2; ++half) {
                int8x16_t w[8];
                const uint8_t* bq = fresh(blk + 128 * p);
                #pragma GCC unroll 8
                for (int c = 0; c < 8; ++c) {
                    const uint8x16_t q = vld1q_u8(bq + 64 + 16 * c);
                    if constexpr (Q5) {
                        const uint8x16_t bit = vreinterpretq_u8_s32(dup_gpr(0x01010101 << (2 * p + half)));
                        const uint8x16_t h = vtstq_u8(vld1q_u8(blk + 576 + 16 * c), bit);
                        w[c] = vreinterpretq_s8_u8(half ? vsriq_n_u8(h, q, 4) : vsliq_n_u8(q, h, 4));
                    } else {
                        w[c] = vreinterpretq_s8_u8(half ? vshrq_n_u8(q, 4) : vandq_u8(q, m4));
                    }
                }
                const int16x8_t sh = vmovl_s8(half ? vzip2_s8(s8, s8) : vzip1_s8(s8, s8));  // r0 r0 r1 r1 r2 r2 r3 r3
                const int32x4_t sj01 = vmovl_s16(vget_low_s16(sh)), sj23 = vmovl_high_s16(sh);
                static_for<NP>([&](auto uc) {
                    constexpr int u = uc;
                    const int8_t* x = xp + u * xs + b * 2 * QK_K + 128 * p + 64 * half;
                    run[u][0] = mm32<ONE>(run[u][0], w[0], w[2], w[4], w[6], x);
                    run[u][1] = mm32<ONE>(run[u][1], w[1], w[3], w[5], w[7], x);
                    i1[u][0] = vmlaq_s32(i1[u][0], run[u][0], sj01);
                    i1[u][1] = vmlaq_s32(i1[u][1], run[u][1], sj23);
                });
            }
        }
        int8x16_t mn01, mn23, sc01, sc23;
        q45k_gather<Q5>(blk, m3, mn01, mn23, sc01, sc23);
        const uint16x8_t hd = vld1q_u16(reinterpret_cast<const uint16_t*>(blk));
        const float32x4_t dw = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(hd)));
        const float32x4_t dm = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(hd)));
        const float* sd = side + b * 5 * NT;
        static_for<NP>([&](auto uc) {
            constexpr int u = uc;
            const int64x2_t ab0 = vld1q_s64(reinterpret_cast<const int64_t*>(sd + NT + 8 * u));  // a_0..7, b_0..7
            const int64x2_t ab1 = ONE ? ab0 : vld1q_s64(reinterpret_cast<const int64_t*>(sd + NT + 8 * u + 4));
            const int8x16_t A = vreinterpretq_s8_s64(vzip1q_s64(ab0, ab1)), B = vreinterpretq_s8_s64(vzip2q_s64(ab0, ab1));
            const int32x4_t z = dup_gpr(0);
            const int32x4_t i2a = vmmlaq_s32(vshlq_n_s32(vmmlaq_s32(z, mn01, A), 5), mn01, B);
            const int32x4_t i2b = vmmlaq_s32(vshlq_n_s32(vmmlaq_s32(z, mn23, A), 5), mn23, B);
            if constexpr (ONE) {  // rows in lanes: the split sums folded, the mins' duplicated lanes taken once
                int32x4_t i1r = vpaddq_s32(i1[0][0], i1[0][1]);
                if constexpr (Q5) {
                    const int32x4_t ca = vmmlaq_s32(vshlq_n_s32(vmmlaq_s32(z, sc01, A), 5), sc01, B);
                    const int32x4_t cb = vmmlaq_s32(vshlq_n_s32(vmmlaq_s32(z, sc23, A), 5), sc23, B);
                    i1r = vaddq_s32(i1r, vshlq_n_s32(vuzp1q_s32(ca, cb), 4));
                }
                const float32x4_t dx = vld1q_dup_f32(sd);
                acc[0][0] = vfmaq_f32(acc[0][0], vmulq_f32(dw, dx), vcvtq_f32_s32(i1r));
                acc[0][0] = vfmsq_f32(acc[0][0], vmulq_f32(dm, dx), vcvtq_f32_s32(vuzp1q_s32(i2a, i2b)));
                return;
            }
            if constexpr (Q5) {  // + 16 sum_j sc_j S_j
                const int32x4_t ca = vmmlaq_s32(vshlq_n_s32(vmmlaq_s32(z, sc01, A), 5), sc01, B);
                const int32x4_t cb = vmmlaq_s32(vshlq_n_s32(vmmlaq_s32(z, sc23, A), 5), sc23, B);
                i1[u][0] = vaddq_s32(i1[u][0], vshlq_n_s32(ca, 4));
                i1[u][1] = vaddq_s32(i1[u][1], vshlq_n_s32(cb, 4));
            }
            const float32x4_t dx = pair_f32<ONE>(sd + 2 * u);
            acc[u][0] = vfmaq_f32(acc[u][0], vmulq_f32(rows01(dw), dx), vcvtq_f32_s32(i1[u][0]));
            acc[u][0] = vfmsq_f32(acc[u][0], vmulq_f32(rows01(dm), dx), vcvtq_f32_s32(i2a));
            acc[u][1] = vfmaq_f32(acc[u][1], vmulq_f32(rows23(dw), dx), vcvtq_f32_s32(i1[u][1]));
            acc[u][1] = vfmsq_f32(acc[u][1], vmulq_f32(rows23(dm), dx), vcvtq_f32_s32(i2b));
        });
    }
    store_pairs<NT>(acc, out);
}

// Q6_K, one group against the tile: packed_q6k's decode (chunks 0, 2: rows 0-1; 1, 3: rows 2-3), then per pair
// two smmla per row pair and sub-block into the running sums, and the telescoped scale steps.
template <int NT>
__attribute__((noinline)) void mm_q6k(const uint8_t* G, int64_t nb, const int8_t* xp, int64_t xs, const float* side,
                                      float (*out)[4]) {
    constexpr int NP = (NT + 1) / 2;
    constexpr bool ONE = NT == 1;
    float32x4_t acc[NP][2];
    for (int u = 0; u < NP; ++u) acc[u][0] = acc[u][1] = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = G + b * 840;
        int8_t sc[72];  // the 64 scales (sub-block k, row r at 4k + r), then zeros: sc_16 = 0 for the last step
        #pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) vst1q_s8(sc + 16 * v, vld1q_s8(reinterpret_cast<const int8_t*>(blk + 8 + 16 * v)));
        vst1_s8(sc + 64, vdup_n_s8(0));
        int32x4_t i1[NP][2], run[NP][2];
        for (int u = 0; u < NP; ++u) i1[u][0] = i1[u][1] = run[u][0] = run[u][1] = vdupq_n_s32(0);
        const int8_t* xk = xp + b * 2 * QK_K;
        #pragma GCC unroll 1
        for (int k = 0; k < 16; ++k) {
            const uint8_t* tk = blk + 72 + 48 * k;
            const int8x16_t P = vld1q_s8(reinterpret_cast<const int8_t*>(tk));
            const int8x16_t Q = vld1q_s8(reinterpret_cast<const int8_t*>(tk + 16));
            const int8x16_t R = vld1q_s8(reinterpret_cast<const int8_t*>(tk + 32));
            const int8x16_t w0 = vshrq_n_s8(P, 2), w1 = vshrq_n_s8(Q, 2), w3 = vshrq_n_s8(R, 2);
            const int8x16_t w2 = vshrq_n_s8(vshlq_n_s8(vsliq_n_s8(vsliq_n_s8(P, Q, 2), R, 4), 2), 2);
            const int8x8_t s8 = vld1_s8(sc + 4 * k);  // sc_k, sc_k+1 of rows 0-3
            const int16x8_t sh = vsubl_s8(vzip1_s8(s8, s8), vzip2_s8(s8, s8));  // the steps, r0 r0 r1 r1 r2 r2 r3 r3
            const int32x4_t sj01 = vmovl_s16(vget_low_s16(sh)), sj23 = vmovl_high_s16(sh);
            static_for<NP>([&](auto uc) {
                constexpr int u = uc;
                const int8_t* x = xk + u * xs + 32 * k;
                const int8x16_t x0 = vld1q_s8(x), x1 = vld1q_s8(x + 16);
                run[u][0] = mmla<ONE>(mmla<ONE>(run[u][0], w0, x0), w2, x1);
                run[u][1] = mmla<ONE>(mmla<ONE>(run[u][1], w1, x0), w3, x1);
                i1[u][0] = vmlaq_s32(i1[u][0], run[u][0], sj01);
                i1[u][1] = vmlaq_s32(i1[u][1], run[u][1], sj23);
            });
        }
        const float32x4_t dw = h2f4(blk), dw01 = rows01(dw), dw23 = rows23(dw);
        if constexpr (ONE) {  // the split sums folded to rows
            const int32x4_t i1r = vpaddq_s32(i1[0][0], i1[0][1]);
            acc[0][0] = vfmaq_f32(acc[0][0], vmulq_f32(dw, vld1q_dup_f32(side + b)), vcvtq_f32_s32(i1r));
            continue;
        }
        static_for<NP>([&](auto uc) {
            constexpr int u = uc;
            const float32x4_t dx = pair_f32<ONE>(side + b * NT + 2 * u);
            acc[u][0] = vfmaq_f32(acc[u][0], vmulq_f32(dw01, dx), vcvtq_f32_s32(i1[u][0]));
            acc[u][1] = vfmaq_f32(acc[u][1], vmulq_f32(dw23, dx), vcvtq_f32_s32(i1[u][1]));
        });
    }
    store_pairs<NT>(acc, out);
}

template <int NT>
void mm_group(GGMLType wt, const uint8_t* G, int64_t nb, const int8_t* xp, int64_t xs, const float* side,
              float (*out)[4]) {
    switch (wt) {
        case GGMLType::Q4_0: return mm_legacy<GGMLType::Q4_0, NT>(G, nb, xp, xs, side, out);
        case GGMLType::Q4_1: return mm_legacy<GGMLType::Q4_1, NT>(G, nb, xp, xs, side, out);
        case GGMLType::Q5_0: return mm_legacy<GGMLType::Q5_0, NT>(G, nb, xp, xs, side, out);
        case GGMLType::Q5_1: return mm_legacy<GGMLType::Q5_1, NT>(G, nb, xp, xs, side, out);
        case GGMLType::Q8_0: return mm_legacy<GGMLType::Q8_0, NT>(G, nb, xp, xs, side, out);
        case GGMLType::Q4_K: return mm_q45k<false, NT>(G, nb, xp, xs, side, out);
        case GGMLType::Q5_K: return mm_q45k<true, NT>(G, nb, xp, xs, side, out);
        case GGMLType::Q6_K: return mm_q6k<NT>(G, nb, xp, xs, side, out);
        default: break;
    }
}

// The records' int8 values pair by pair, each pair's two records side by side in 8-value steps (pair u at
// xi + u * 2K: record 2u's values 8k..8k+7, then record 2u + 1's); an odd count's last record is there twice.
void interleave_pairs(GGMLType wt, int64_t K, const uint8_t* acts, int n_rec, std::vector<int8_t>& xi) {
    const int64_t xs = act_layout(wt, K).stride;
    xi.resize(static_cast<size_t>((n_rec + 1) / 2 * 2 * K));
    for (int u = 0; 2 * u < n_rec; ++u) {
        const int8_t* a = reinterpret_cast<const int8_t*>(acts + 2 * u * xs);
        const int8_t* b = 2 * u + 1 < n_rec ? a + xs : a;
        int8_t* d = xi.data() + u * 2 * K;
        for (int64_t k = 0; k < K; k += 8) vst1q_s8(d + 2 * k, vcombine_s8(vld1_s8(a + k), vld1_s8(b + k)));
    }
}

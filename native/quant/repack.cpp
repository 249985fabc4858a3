// Row-interleaved ("packed") weight layouts and their matmul entry (quant.h: pack_weights, matmul_packed).
// A packed matrix keeps its size and its groups of PACK_ROWS rows in place: group g occupies the bytes
// rows 4g..4g+3 had, re-ordered so that one 16-byte load holds four bytes of each of the four rows (one
// by-element sdot then gives the four rows' partial dots in four lanes). Layout of one group, per type:
//   Q4_0  blocks of 72 bytes: d of rows 0-3 (4 x fp16), then 4 chunks c of 16 bytes: rows 0-3 x qs[4c..4c+4),
//         each byte XOR 0x88 (a nibble n then reads (n - 8) * 16 as int8 after a shift or a mask);
//   Q4_1  blocks of 80 bytes: d x 4, m x 4, then the 4 chunks of Q4_0 (XOR 0x88 as there);
//   Q8_0  blocks of 136 bytes: d of rows 0-3, then 8 chunks c: rows 0-3 x qs[4c..4c+4);
//   Q5_0  blocks of 88 bytes: d x 4, 16 bytes of inverted fifth bits (byte 4r + k, bit c: element 4c + k of
//         row r; bit 4 + c: element 16 + 4c + k), then qs in 4 chunks as Q4_0 (not XORed);
//   Q5_1  blocks of 96 bytes: d x 4, m x 4, then the fifth bits and chunks of Q5_0 (bits inverted as there);
//   Q6_K  blocks of 840 bytes: d x 4, the int8 scales of (sub-block k, row r) at 8 + 4k + r, then per sub-block
//         k its 4 chunks (rows 0-3 x 4 values each) as 6-bit fields packed in 3 vectors (q6k_block);
//   Q4_K  blocks of 576 bytes: d x 4, dmin x 4, the 6-bit scales and mins of (sub-block j, row r), entry
//         i = 4j + r, as 16 bytes of low nibbles of sc (i and i + 16), 16 of mn, 16 of high bits
//         (bits 0-1: sc_i, 2-3: sc_i+16, 4-5: mn_i, 6-7: mn_i+16), then qs: for p in 0..3, chunk c in 0..7,
//         rows 0-3 x qs[32p + 4c .. +4).
//   Q5_K  blocks of 704 bytes: the 576 of Q4_K, then qh in 8 chunks (rows 0-3 x qh[4c..4c+4)), each byte
//         inverted (a kernel decodes v - 16: 0xf0 inserted above the nibble where the fifth bit is 0).
// Row-pair layout (kernels.h: packed_row_pairs; the aarch64 i8mm variant's, chosen once per process with the
// variant): the same blocks, but every run of chunks above (qs, Q8_0's values, Q5's fifth bits by position,
// Q5_K's qh, Q6_K's P/Q/R positions) holds, per 16 bytes, eight bytes of row 2i then the same eight of row
// 2i + 1 (chunk_at below): the operand of one smmla. Sizes and the scales' places do not change.
// Legacy types store their blocks lane-major: the blocks of canonical lane l (b % L_LANES == l, blocks.h)
// together in order, lane 0 first, so a kernel runs one lane's accumulation at a time over contiguous
// memory. Unpacking restores the GGUF bytes exactly (tested), so any path can run a packed group through
// its GGUF kernel; results are bit-identical either way.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "quant/blocks.h"
#include "quant/kernels.h"
#include "quant/quant.h"

namespace lg {

namespace {

int64_t packed_block_bytes(GGMLType wt) {
    return PACK_ROWS * (wt == GGMLType::Q4_K ? 144 : wt == GGMLType::Q5_K ? 176 : wt == GGMLType::Q6_K ? 210
                                                                                         : ggml_bytes_per_block32(wt));
}

// Where byte j of a row's chunked field (4n bytes, n even) goes among the n interleaved 16-byte chunks of rows
// 0-3: by default chunk j / 4 holds four bytes of each row (4r + j % 4); in the row-pair layout (the i8mm
// variant's: packed_row_pairs) chunk 2 (j / 8) + r / 2 holds eight bytes of rows 2 (r / 2) and 2 (r / 2) + 1
// (8 (r % 2) + j % 8), the 2x8 operand of one smmla.
inline int chunk_at(int r, int j, bool pairs) {
    return pairs ? 16 * (2 * (j / 8) + r / 2) + 8 * (r % 2) + j % 8 : 16 * (j / 4) + 4 * r + j % 4;
}

// n chunks of src (a row's field, stride 1) to rows' interleaved chunks at pk (16-byte stride), and back.
void chunks(uint8_t* row_field, uint8_t* pk, int r, int n, uint8_t x, bool to_gguf, bool pairs) {
    for (int j = 0; j < 4 * n; ++j) {
        uint8_t& p = pk[chunk_at(r, j, pairs)];
        if (to_gguf) row_field[j] = p ^ x;
        else p = row_field[j] ^ x;
    }
}

// Q5_0 and Q5_1 (m: the Q5_1 min, stored after the d of the four rows).
void q5_block(GGMLType wt, uint8_t* gguf, int64_t rb, uint8_t* pk, bool to_gguf, bool pairs) {
    const bool m = wt == GGMLType::Q5_1;
    const int ho = m ? 4 : 2, po = m ? 16 : 8;  // qh in the GGUF block; the fifth bits in the packed one
    for (int r = 0; r < PACK_ROWS; ++r) {
        uint8_t* g = gguf + r * rb;  // d, [m,] qh (u32 LE), qs[16]
        if (to_gguf) std::memcpy(g, pk + 2 * r, 2);
        else std::memcpy(pk + 2 * r, g, 2);
        if (m && to_gguf) std::memcpy(g + 2, pk + 8 + 2 * r, 2);
        else if (m) std::memcpy(pk + 8 + 2 * r, g + 2, 2);
        uint32_t qh = 0;
        if (!to_gguf) std::memcpy(&qh, g + ho, 4);
        for (int j = 0; j < 16; ++j) {  // qs byte j: element j (low nibble, bit c) and 16 + j (high, bit 4 + c)
            const int at = chunk_at(r, j, pairs), c = at / 16;
            uint8_t& h = pk[po + at % 16];
            for (int hi = 0; hi < 2; ++hi) {
                const int e = j + 16 * hi, bit = c + 4 * hi;
                if (to_gguf) qh |= static_cast<uint32_t>(((h >> bit) & 1) ^ 1) << e;
                else h = static_cast<uint8_t>((h & ~(1 << bit)) | (((qh >> e) & 1) ^ 1) << bit);
            }
        }
        if (to_gguf) std::memcpy(g + ho, &qh, 4);
        chunks(g + ho + 4, pk + po + 16, r, 4, 0, to_gguf, pairs);
    }
}

// Q6_K: for sub-block k, byte j of row r's chunked field (element 16k + j) sits at chunk_at(r, j): chunk c,
// position i; there v = q ^ 32 (q - 32 as a 6-bit two's complement value), and the 4 chunks of sub-block k go
// in 3 vectors P, Q, R at 72 + 48k, byte i: P = v_0 << 2 | bits 0-1 of v_2, Q = v_1 << 2 | bits 2-3 of v_2,
// R = v_3 << 2 | bits 4-5 of v_2 (v_c: chunk c's value at i).
void q6k_block(uint8_t* gguf, int64_t rb, uint8_t* pk, bool to_gguf, bool pairs) {
    BlockQ6K* rows[PACK_ROWS];
    for (int r = 0; r < PACK_ROWS; ++r) {
        BlockQ6K* b = rows[r] = reinterpret_cast<BlockQ6K*>(gguf + r * rb);
        if (to_gguf) {
            std::memcpy(&b->d, pk + 2 * r, 2);
            std::memset(b->ql, 0, sizeof b->ql);
            std::memset(b->qh, 0, sizeof b->qh);
        } else {
            std::memcpy(pk + 2 * r, &b->d, 2);
        }
        for (int k = 0; k < 16; ++k) {
            if (to_gguf) std::memcpy(&b->scales[k], pk + 8 + 4 * k + r, 1);
            else std::memcpy(pk + 8 + 4 * k + r, &b->scales[k], 1);
        }
    }
    for (int k = 0; k < 16; ++k) {
        uint8_t* t = pk + 72 + 48 * k;  // P; Q at t + 16, R at t + 32
        int v[4][16];  // chunk c, position i
        if (to_gguf) {
            for (int i = 0; i < 16; ++i) {
                v[0][i] = t[i] >> 2;
                v[1][i] = t[16 + i] >> 2;
                v[3][i] = t[32 + i] >> 2;
                v[2][i] = (t[i] & 3) | (t[16 + i] & 3) << 2 | (t[32 + i] & 3) << 4;
            }
        }
        for (int r = 0; r < PACK_ROWS; ++r) {
            BlockQ6K* b = rows[r];
            for (int j = 0; j < 16; ++j) {
                const int at = chunk_at(r, j, pairs), e = 16 * k + j, h = e / 128, w = e % 128;
                int& val = v[at / 16][at % 16];
                if (!to_gguf) {
                    const int q = ((b->ql[64 * h + w % 64] >> (4 * (w / 64))) & 0xf) |
                                  ((b->qh[32 * h + w % 32] >> (2 * (w / 32))) & 3) << 4;
                    val = q ^ 32;
                } else {
                    const int q = val ^ 32;
                    b->ql[64 * h + w % 64] = static_cast<uint8_t>(b->ql[64 * h + w % 64] | (q & 0xf) << (4 * (w / 64)));
                    b->qh[32 * h + w % 32] = static_cast<uint8_t>(b->qh[32 * h + w % 32] | (q >> 4) << (2 * (w / 32)));
                }
            }
        }
        if (!to_gguf) {
            for (int i = 0; i < 16; ++i) {
                t[i] = static_cast<uint8_t>(v[0][i] << 2 | (v[2][i] & 3));
                t[16 + i] = static_cast<uint8_t>(v[1][i] << 2 | (v[2][i] >> 2 & 3));
                t[32 + i] = static_cast<uint8_t>(v[3][i] << 2 | (v[2][i] >> 4 & 3));
            }
        }
    }
}

// Position of block b among a legacy group's lane-major blocks.
int64_t lane_major_pos(int64_t nb, int64_t b) {
    const int64_t l = b % L_LANES;
    int64_t start = 0;
    for (int64_t k = 0; k < l; ++k) start += (nb - k + L_LANES - 1) / L_LANES;
    return start + b / L_LANES;
}

// The GGUF blocks of a group's 4 rows (src: row stride rb) into one packed block at pk, and back (to_gguf):
// Q4_0, Q4_1, Q8_0 (Q4_1: m after the d of the four rows).
void legacy_block(GGMLType wt, uint8_t* gguf, int64_t rb, uint8_t* pk, bool to_gguf, bool pairs) {
    const bool m = wt == GGMLType::Q4_1;
    const int n_chunks = wt == GGMLType::Q8_0 ? 8 : 4, go = m ? 4 : 2, po = m ? 16 : 8;
    const uint8_t x = wt == GGMLType::Q8_0 ? 0x00 : 0x88;
    for (int r = 0; r < PACK_ROWS; ++r) {
        uint8_t* g = gguf + r * rb;
        if (to_gguf) std::memcpy(g, pk + 2 * r, 2);
        else std::memcpy(pk + 2 * r, g, 2);
        if (m && to_gguf) std::memcpy(g + 2, pk + 8 + 2 * r, 2);
        else if (m) std::memcpy(pk + 8 + 2 * r, g + 2, 2);
        chunks(g + go, pk + po, r, n_chunks, x, to_gguf, pairs);
    }
}

template <typename Block>  // BlockQ4K or BlockQ5K
void q45k_block(uint8_t* gguf, int64_t rb, uint8_t* pk, bool to_gguf, bool pairs) {
    constexpr bool q5 = std::is_same<Block, BlockQ5K>::value;
    int sc[32], mn[32];
    if (!to_gguf) {
        for (int r = 0; r < PACK_ROWS; ++r) {
            const Block* b = reinterpret_cast<const Block*>(gguf + r * rb);
            std::memcpy(pk + 2 * r, &b->d, 2);
            std::memcpy(pk + 8 + 2 * r, &b->dmin, 2);
            for (int j = 0; j < 8; ++j) q4k_scale_min(b->scales, j, &sc[4 * j + r], &mn[4 * j + r]);
            for (int p = 0; p < 4; ++p) chunks(const_cast<uint8_t*>(b->qs + 32 * p), pk + 64 + 128 * p, r, 8, 0, false, pairs);
            if constexpr (q5) chunks(const_cast<uint8_t*>(b->qh), pk + 576, r, 8, 0xff, false, pairs);
        }
        for (int k = 0; k < 16; ++k) {
            pk[16 + k] = static_cast<uint8_t>((sc[k] & 15) | (sc[16 + k] & 15) << 4);
            pk[32 + k] = static_cast<uint8_t>((mn[k] & 15) | (mn[16 + k] & 15) << 4);
            pk[48 + k] = static_cast<uint8_t>(sc[k] >> 4 | (sc[16 + k] >> 4) << 2 | (mn[k] >> 4) << 4 | (mn[16 + k] >> 4) << 6);
        }
        return;
    }
    for (int k = 0; k < 16; ++k) {
        const int h = pk[48 + k];
        sc[k] = (pk[16 + k] & 15) | (h & 3) << 4;
        sc[16 + k] = pk[16 + k] >> 4 | (h >> 2 & 3) << 4;
        mn[k] = (pk[32 + k] & 15) | (h >> 4 & 3) << 4;
        mn[16 + k] = pk[32 + k] >> 4 | (h >> 6) << 4;
    }
    for (int r = 0; r < PACK_ROWS; ++r) {
        Block* b = reinterpret_cast<Block*>(gguf + r * rb);
        std::memcpy(&b->d, pk + 2 * r, 2);
        std::memcpy(&b->dmin, pk + 8 + 2 * r, 2);
        for (int j = 0; j < 4; ++j) {  // the inverse of q4k_scale_min
            const int s0 = sc[4 * j + r], m0 = mn[4 * j + r], s1 = sc[4 * (j + 4) + r], m1 = mn[4 * (j + 4) + r];
            b->scales[j] = static_cast<uint8_t>(s0 | (s1 >> 4) << 6);
            b->scales[j + 4] = static_cast<uint8_t>(m0 | (m1 >> 4) << 6);
            b->scales[j + 8] = static_cast<uint8_t>((s1 & 15) | (m1 & 15) << 4);
        }
        for (int p = 0; p < 4; ++p) chunks(b->qs + 32 * p, pk + 64 + 128 * p, r, 8, 0, true, pairs);
        if constexpr (q5) chunks(b->qh, pk + 576, r, 8, 0xff, true, pairs);
    }
}

// One group between its GGUF bytes (gguf: PACK_ROWS rows of rb bytes) and its packed bytes.
void convert_group(GGMLType wt, int64_t K, uint8_t* gguf, uint8_t* packed, bool to_gguf) {
    const int64_t rb = quant_row_bytes(wt, K), nb = K / quant_block_elems(wt), pb = packed_block_bytes(wt);
    const int64_t bb = rb / nb;
    const bool pairs = packed_row_pairs(wt);
    for (int64_t b = 0; b < nb; ++b) {
        if (wt == GGMLType::Q4_K) q45k_block<BlockQ4K>(gguf + b * bb, rb, packed + b * pb, to_gguf, pairs);
        else if (wt == GGMLType::Q5_K) q45k_block<BlockQ5K>(gguf + b * bb, rb, packed + b * pb, to_gguf, pairs);
        else if (wt == GGMLType::Q6_K) q6k_block(gguf + b * bb, rb, packed + b * pb, to_gguf, pairs);
        else if (wt == GGMLType::Q5_0 || wt == GGMLType::Q5_1)
            q5_block(wt, gguf + b * bb, rb, packed + lane_major_pos(nb, b) * pb, to_gguf, pairs);
        else legacy_block(wt, gguf + b * bb, rb, packed + lane_major_pos(nb, b) * pb, to_gguf, pairs);
    }
}

void check_packable(GGMLType wt, int64_t rows, int64_t K, const char* what) {
    quant_check(wt, K, what);
    if (!pack_type(wt) || rows % PACK_ROWS != 0 || K <= 0)
        throw std::invalid_argument(std::string(what) + ": no packed layout for " + ggml_type_name(wt) + " with " +
                                    std::to_string(rows) + " rows");
}

}  // namespace

bool pack_type(GGMLType wt) {
    return act_kind(wt) != ActKind::None;  // every quantized type the kernels take
}

#if !LG_SIMD_NEON
bool packed_row_pairs(GGMLType) { return false; }  // the row-pair layout serves only the aarch64 i8mm kernels
#endif

bool packed_kernels() {
#if LG_SIMD_NEON
    return true;
#else
    return false;
#endif
}

void pack_weights(GGMLType wt, uint8_t* W, int64_t rows, int64_t K) {
    check_packable(wt, rows, K, "pack_weights");
    const int64_t gb = PACK_ROWS * quant_row_bytes(wt, K);
    std::vector<uint8_t> tmp(static_cast<size_t>(gb));  // one group: the matrix is converted in place
    for (int64_t g = 0; g < rows / PACK_ROWS; ++g) {
        convert_group(wt, K, W + g * gb, tmp.data(), false);
        std::memcpy(W + g * gb, tmp.data(), static_cast<size_t>(gb));
    }
}

void unpack_weight_rows(GGMLType wt, const uint8_t* W, int64_t K, int64_t g0, int64_t g1, uint8_t* out) {
    check_packable(wt, (g1 - g0) * PACK_ROWS, K, "unpack_weight_rows");
    const int64_t gb = PACK_ROWS * quant_row_bytes(wt, K);
    for (int64_t g = g0; g < g1; ++g)
        convert_group(wt, K, out + (g - g0) * gb, const_cast<uint8_t*>(W + g * gb), true);
}

}  // namespace lg

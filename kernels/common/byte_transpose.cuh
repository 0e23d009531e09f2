#pragma once

// 4 x 4 byte blocks transposed in registers: the kernels that stage an FP8 tile in shared memory read it back as words
// (4 columns of a row each) and write the transposed copy's 8-byte pieces from 8 of them, where a byte per load took 8
// loads per piece and met bank conflicts.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace tewb::kernels::detail {

// Column k (0..3) of four rows' words a, b, c, d (byte k of each, rows in order) as one word.
struct Columns4 {
    std::uint32_t c[4];
};

__device__ inline Columns4 transpose_4x4(std::uint32_t a, std::uint32_t b, std::uint32_t c, std::uint32_t d) {
    const std::uint32_t ab01 = __byte_perm(a, b, 0x5140);  // a0 b0 a1 b1
    const std::uint32_t cd01 = __byte_perm(c, d, 0x5140);
    const std::uint32_t ab23 = __byte_perm(a, b, 0x7362);  // a2 b2 a3 b3
    const std::uint32_t cd23 = __byte_perm(c, d, 0x7362);
    return {{__byte_perm(ab01, cd01, 0x5410), __byte_perm(ab01, cd01, 0x7632), __byte_perm(ab23, cd23, 0x5410),
             __byte_perm(ab23, cd23, 0x7632)}};
}

// A 64-column FP8 tile's row pitch in bytes for transpose_8x4 readers: 17 words, so that a warp's 32 word loads (8
// column quads x 4 row parts of 8 rows, transposed_block_of) fall on 32 different banks; rows 4-byte aligned.
inline constexpr int kByteTilePitch = 64 + 4;

// The 8 x 4 block thread `thread` (< 128, or < 64 for a tile of 32 rows) takes from a tile of 64 columns: columns
// 4 · quad .. + 3 at rows 8 · part .. + 7. Warp w holds quads 8 · (w % 2) .. + 7 and parts 4 · (w / 2) .. + 3 (lane l:
// + l % 8, + l / 8).
struct TransposedBlock {
    int quad;
    int part;
};

__device__ inline TransposedBlock transposed_block_of(int thread) {
    const int warp = thread / 32;
    const int lane = thread % 32;
    return {8 * (warp % 2) + lane % 8, 4 * (warp / 2) + lane / 8};
}

// The 4 columns of an 8-row block of `tile` (pitch kByteTilePitch) as 8-byte pieces: piece k (lo.c[k], hi.c[k]) holds
// column 4 · quad + k, rows 8 · part .. + 7 in order (byte i of the 8 is row 8 · part + i).
struct Pieces4 {
    Columns4 lo;  // rows 0..3 of the block
    Columns4 hi;  // rows 4..7
};

__device__ inline Pieces4 transpose_8x4(const std::uint8_t* tile, TransposedBlock b) {
    std::uint32_t w[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) w[i] = *reinterpret_cast<const std::uint32_t*>(tile + (b.part * 8 + i) * kByteTilePitch + b.quad * 4);
    return {transpose_4x4(w[0], w[1], w[2], w[3]), transpose_4x4(w[4], w[5], w[6], w[7])};
}

// Byte i (row 8 · part + i) of piece k: for the byte-wise stores at a ragged end.
__device__ inline std::uint8_t piece_byte(const Pieces4& p, int k, int i) {
    return static_cast<std::uint8_t>((i < 4 ? p.lo.c[k] : p.hi.c[k]) >> (8 * (i % 4)));
}

}  // namespace tewb::kernels::detail

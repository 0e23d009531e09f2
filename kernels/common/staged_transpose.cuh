#pragma once

// The transposed FP8 copy written from a shared-memory stage: a producing kernel keeps the FP8 bytes of a
// band of consecutive rows of its output and writes each column's run of bytes to the transposed copy in
// 8-byte pieces, so the copy needs no launch (and no read of the output) of its own. The stage is read back in words
// and transposed in registers (byte_transpose.cuh), 2 loads a piece where a byte a load took 8.
#include <cstddef>
#include <cstdint>

#include "common/byte_transpose.cuh"

namespace tewb::kernels::detail {

// stage: `band_rows` rows (a multiple of 8) of `pitch` bytes in shared memory (4-byte aligned; pitch from
// staged_transpose_pitch), row i holding the bytes of output row r0 + i (r0 a multiple of 8), columns c0 .. c0 + width - 1
// at stage[i * pitch + 0 .. width - 1]. Writes them to q_t [cols, rows] (row-major: q_t[c * rows + r]); rows r0 + i >= rows
// are skipped (their stage bytes are read but never stored, as the bytes past `width` in a row's last word). A thread
// reads an 8 x 4 block of the stage (8 rows, 4 columns) as 8 words and turns it into 4 pieces (byte_transpose.cuh), each
// 8 rows of one column: one 8-byte store where it is whole and its address 8-byte aligned, byte stores at a ragged end or
// an unaligned address. A warp takes 32 / p column quads x p row parts (p = 4, or the band's 1 or 2 parts): for p = 4 its
// 32 word loads fall on 32 banks (pitch % 16 == 4: rows 8 apart are 8 banks apart) and each column's 4 pieces (one
// 32-byte sector of q_t) are stored by the same instruction; p = 1 is conflict-free too, p = 2 meets 2-way conflicts.
// Every thread of the block (a multiple of 32 of them) calls it; the caller synchronizes before (the stage complete) and
// after (before the stage is refilled).
__device__ inline void write_staged_transpose(const std::uint8_t* stage, int pitch, int band_rows, int width, std::uint8_t* q_t,
                                              int rows, int r0, int c0) {
    const int parts = band_rows / 8;
    const int warp_parts = parts >= 4 ? 4 : parts >= 2 ? 2 : 1;
    const int warp_quads = 32 / warp_parts;
    const int quads = (width + 3) / 4;
    const int quad_groups = (quads + warp_quads - 1) / warp_quads;
    const int warp_tiles = quad_groups * ((parts + warp_parts - 1) / warp_parts);
    const int threads = blockDim.x * blockDim.y * blockDim.z;
    const int thread = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    const int lane = thread % 32;
    for (int tile = thread / 32; tile < warp_tiles; tile += threads / 32) {
        const int quad = (tile % quad_groups) * warp_quads + lane % warp_quads;
        const int part = (tile / quad_groups) * warp_parts + lane / warp_quads;
        const int rt = r0 + part * 8;
        if (quad >= quads || part >= parts || rt >= rows) continue;
        std::uint32_t w[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) w[i] = *reinterpret_cast<const std::uint32_t*>(stage + (part * 8 + i) * pitch + quad * 4);
        const Pieces4 p{transpose_4x4(w[0], w[1], w[2], w[3]), transpose_4x4(w[4], w[5], w[6], w[7])};
        std::uint8_t* to = q_t + static_cast<std::size_t>(c0 + quad * 4) * rows + rt;  // column quad * 4's piece
        const bool all_whole = rt + 8 <= rows && rows % 8 == 0 && reinterpret_cast<std::uintptr_t>(q_t) % 8 == 0;
        // Unrolled in both cases: a piece indexed by a run-time k would put p in local memory.
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            if (quad * 4 + k >= width) break;
            std::uint8_t* piece = to + static_cast<std::size_t>(k) * rows;
            if (all_whole || (rt + 8 <= rows && reinterpret_cast<std::uintptr_t>(piece) % 8 == 0)) {
                *reinterpret_cast<uint2*>(piece) = make_uint2(p.lo.c[k], p.hi.c[k]);
            } else {
                for (int i = 0; i < 8 && rt + i < rows; ++i) piece[i] = piece_byte(p, k, i);
            }
        }
    }
}

// A stage pitch of at least `width` bytes with pitch % 16 == 4 (see write_staged_transpose): rows 4-byte
// aligned, so stage rows take 4-byte stores at offsets that are multiples of 4.
constexpr int staged_transpose_pitch(int width) {
    return (width + 15) / 16 * 16 + 4;
}

}  // namespace tewb::kernels::detail

#pragma once

// The transposed FP8 copy written from a shared-memory stage: a producing kernel keeps the FP8 bytes of a
// band of consecutive rows of its output and writes each column's run of bytes to the transposed copy in
// 8-byte pieces, so the copy needs no launch (and no read of the output) of its own.
#include <cstddef>
#include <cstdint>

namespace tewb::kernels::detail {

// stage: `band_rows` rows (a multiple of 8) of `pitch` bytes in shared memory, row i holding the bytes of
// output row r0 + i, columns c0 .. c0 + width - 1 at stage[i * pitch + 0 .. width - 1]. Writes them to
// q_t [cols, rows] (row-major: q_t[c * rows + r]); rows r0 + i >= rows are skipped (their stage bytes are
// never read). A piece is 8 rows of one column: one 8-byte store where it is whole and its address 8-byte
// aligned, byte stores at a ragged end or an unaligned address. The pieces of a column are taken by
// neighbouring threads (one 32-byte sector per 4 of them); with pitch % 16 == 4 (staged_transpose_pitch) the
// pieces 0-3 of a column read stage rows 8 banks apart, so a warp's reads do not conflict for bands of up to
// 32 rows (2-way for 64). Every thread of the block calls it; the caller synchronizes before (the stage
// complete) and after (before the stage is refilled).
__device__ inline void write_staged_transpose(const std::uint8_t* stage, int pitch, int band_rows, int width, std::uint8_t* q_t,
                                              int rows, int r0, int c0) {
    const int parts = band_rows / 8;
    const int pieces = width * parts;
    const int threads = blockDim.x * blockDim.y * blockDim.z;
    const int thread = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    for (int piece = thread; piece < pieces; piece += threads) {
        const int col = piece / parts;
        const int part = piece % parts;
        const int rt = r0 + part * 8;
        if (rt >= rows) continue;
        const std::uint8_t* from = stage + part * 8 * pitch + col;
        std::uint8_t* to = q_t + static_cast<std::size_t>(c0 + col) * rows + rt;
        if (rt + 8 <= rows && reinterpret_cast<std::uintptr_t>(to) % 8 == 0) {
            unsigned words[2] = {0u, 0u};
#pragma unroll
            for (int i = 0; i < 8; ++i) words[i / 4] |= static_cast<unsigned>(from[i * pitch]) << (8 * (i % 4));
            *reinterpret_cast<uint2*>(to) = make_uint2(words[0], words[1]);
        } else {
            for (int i = 0; i < 8 && rt + i < rows; ++i) to[i] = from[i * pitch];
        }
    }
}

// A stage pitch of at least `width` bytes with pitch % 16 == 4 (see write_staged_transpose): rows 4-byte
// aligned, so stage rows take 4-byte stores at offsets that are multiples of 4.
constexpr int staged_transpose_pitch(int width) {
    return (width + 15) / 16 * 16 + 4;
}

}  // namespace tewb::kernels::detail

#pragma once

// The vectorised cast + transpose's two halves of a 64 x 64 tile, shared by the single-tensor kernel (cast.cu) and the
// multi-tensor one (cast_multi.cu): a thread's W values cast to FP8 and stored as words (to the output and to the tile
// staged in shared memory), then the tile's transposed copy from 8 x 4 word blocks (byte_transpose.cuh).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "common/byte_transpose.cuh"
#include "common/elementwise.cuh"

namespace tewb::kernels::detail {

inline constexpr int kFp8Tile = 64;

// fp8(v · s) of W values (4 or 8): one W-byte store to `out` (W-byte aligned) and word stores to `tile_row` (4-byte
// aligned); the largest |v| bits into `local`.
template <int W>
__device__ inline void store_fp8_vector(const float (&v)[W], float s, Fp8Type type, std::uint8_t* out, std::uint8_t* tile_row,
                                        unsigned& local) {
    std::uint32_t words[W / 4] = {};  // the FP8 bytes, 4 to a word
#pragma unroll
    for (int i = 0; i < W; ++i) {
        local = max(local, abs_bits(v[i]));
        words[i / 4] |= static_cast<std::uint32_t>(fp8_from_float(v[i] * s, type)) << (8 * (i % 4));
    }
    if constexpr (W == 8) {
        *reinterpret_cast<uint2*>(out) = make_uint2(words[0], words[1]);
    } else {
        *reinterpret_cast<std::uint32_t*>(out) = words[0];
    }
#pragma unroll
    for (int w = 0; w < W / 4; ++w) *reinterpret_cast<std::uint32_t*>(tile_row + 4 * w) = words[w];
}

// The staged tile [kFp8Tile][kByteTilePitch] (rows r0.., columns c0.. of x [rows, cols], rows a multiple of 8) into
// out_t [cols, rows] (8-byte aligned): 64 columns of 8 pieces of 8 bytes, 4 pieces by each of the block's first 128
// threads from an 8 x 4 block of the tile; a store instruction writes 32 consecutive bytes of 8 rows of out_t.
__device__ inline void store_tile_transposed(const std::uint8_t* tile, std::uint8_t* out_t, int rows, int cols, int r0, int c0) {
    if (threadIdx.x >= kFp8Tile / 4 * 8) return;
    const TransposedBlock blk = transposed_block_of(static_cast<int>(threadIdx.x));
    const int rt = r0 + blk.part * 8;
    if (rt >= rows) return;  // rows a multiple of 8: a block's 8 rows are all x's or none
    const Pieces4 p = transpose_8x4(tile, blk);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        const int ct = c0 + blk.quad * 4 + k;
        if (ct < cols) *reinterpret_cast<uint2*>(out_t + static_cast<std::size_t>(ct) * rows + rt) = make_uint2(p.lo.c[k], p.hi.c[k]);
    }
}

}  // namespace tewb::kernels::detail

#pragma once

#include <cstddef>

#include "tewb_kernels/fp8_type.h"
#include "tewb_kernels/gemm_types.h"

namespace tewb::kernels {

// Where Float8BlockScaling's cast (block_cast_to_fp8) writes, for x [rows, cols] in blocks of
// block_rows × 128. Scales go straight into the layout cuBLASLt's block-scaled GEMMs read
// (gemm_types.h, ScaleMode block_scale_mode(block_rows)), so no GEMM re-lays them out; the layout's
// padding entries are written with 1.
struct BlockCastOutput {
    void* data = nullptr;        // [rows, cols] FP8, required
    float* scale_inv = nullptr;  // required: block_scale_entries(mode, rows, cols) floats
    // Optional: x's transpose [cols, rows], cast in blocks along its own rows (Transformer Engine's
    // columnwise copy: 128 consecutive rows of one column of x per 1×128 block; 128×128 tiles keep the
    // tile's scale), from the same read of x. With it, transposed_scale_inv gets
    // block_scale_entries(mode, cols, rows) floats.
    void* transposed = nullptr;
    float* transposed_scale_inv = nullptr;
    // Optional: max |x| combined into amax[0] as cast_to_fp8 does (the larger kept, a NaN wins): a slot's
    // staging entry, so the statistics need no pass of their own.
    float* amax = nullptr;
    Fp8Type type = Fp8Type::E4M3;
    // Optional: the bias gradient, dbias[c] = the sum of column c of x over all rows ([cols] float32), from
    // the same read of x and in the same launch (two where x has more than 2048 × 128 columns). Float32 math
    // in a fixed order, so it does not vary between runs: per 128-row tile of x, each column's partial sum
    // (0 + rows 0-15 in order, then 16-31, ..., each group of 16 rows summed from 0 and the 8 groups added in
    // order), then the tiles' partial sums in order from 0. It needs dbias_workspace, at least
    // block_cast_dbias_workspace_bytes(rows, cols) bytes (4-byte aligned), which keeps the tiles' partial rows.
    float* dbias = nullptr;
    void* dbias_workspace = nullptr;
    std::size_t dbias_workspace_bytes = 0;
};

// The scale layout of a block cast with `block_rows` rows per block (1 or 128).
constexpr ScaleMode block_scale_mode(int block_rows) {
    return block_rows == 1 ? ScaleMode::Block1x128 : ScaleMode::Block128x128;
}

}  // namespace tewb::kernels

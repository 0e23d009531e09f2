#pragma once

#include <cstddef>
#include <cstdint>

#include "tewb_kernels/entry_points.h"
#include "tewb_kernels/fp8_type.h"
#include "tewb_kernels/tensor.h"

// FP8 casts as core's reference defines them: out = fp8(x · out.scale[0]), float32 product, rounded to nearest
// even, values beyond ±fp8_max (inf included) saturated to ±fp8_max, NaN kept NaN; the FP8 type is out.dtype
// (E4M3 or E5M2). x is float32, bfloat16 or float16, aligned to its element size. When out.amax is set, max |x|
// (before scaling, as the bits of |x|: a NaN ranks above inf) is combined into out.amax[0]: the larger bit
// pattern is kept and a NaN wins, so several casts may record into one staging entry, which must hold 0 or more
// (or NaN) before the first. An x without elements does nothing. The host twins give the kernels' results bit for
// bit (the same float32 product, CUDA's float-to-FP8 conversion, the same sums in the same order) and count the
// same launches.
TEWB_ENTRY_POINTS(
// out [x's rows, cols] = fp8(x · out.scale[0]). One launch.
void cast_to_fp8(const Tensor& x, const Tensor& out, Stream stream);

// x [rows, cols]: out.data gets its cast [rows, cols] and out.transposed (required) the cast of its transpose
// [cols, rows], in one pass; out.amax as above. FP8 GEMMs take operands in TN layout only, so backward needs both.
// One launch.
void cast_transpose_to_fp8(const Tensor& x, const Tensor& out, Stream stream);

// cast_transpose_to_fp8 of x into out, and, from the same read of x, dbias [1, cols] (float32 or bfloat16) = the
// column sums of x (float32 accumulation): a Linear's FP8 output gradient, its transposed copy and its bias gradient
// in one pass (Transformer Engine's cast_transpose_dbias). The sums go through `workspace`
// (cast_transpose_dbias_workspace_bytes) in a fixed order, so they do not vary between runs; the GPU's order
// depends on which kernel runs, and that on the shape and the pointers' alignment (the vectorised kernel for float32
// and bfloat16 input with rows % 8 == 0, cols % (16 / element size) == 0, x 16-byte, out (16 / element size)-byte
// and out.transposed 8-byte aligned); the host twin makes the same choice from the pointers it gets. A NaN sum is
// stored as the GPU's canonical NaN (0x7fffffff; bfloat16 0x7fff). One launch (the last block of each column tile
// finishes its sums), two where the grid has more column tiles than the arrival counters hold
// (common/column_sum_rule.h: over 2048 tiles of 64 columns for the vectorised kernel, of 32 for the other).
void cast_transpose_dbias_to_fp8(const Tensor& x, const Tensor& out, const Tensor& dbias, const Workspace& workspace,
                                 Stream stream);

// A Linear's output gradient for its BF16 (or float32) GEMMs, one pass over x [rows, cols] (float32 or bfloat16):
// out = x in out.dtype (float32 or bfloat16, [rows, cols], rounded to nearest even; not written when out.data is
// null: the sums alone) and dbias ([1, cols], float32 or bfloat16) = the column sums of x, float32 accumulation in a
// fixed order (cast_dbias_geometry.h: per block row of the grid, each thread row's sum over its rows in order, then
// 0 + thread row 0 + ... + 7, then the block rows in order) through `workspace` (cast_dbias_workspace_bytes), so
// they do not vary between runs; a NaN sum is stored as the GPU's canonical NaN. It stands for a dtype cast plus
// cuBLASLt's BGRADB epilogue, whose helper kernel and memset it replaces. One launch; two where x has more than
// 2048 tiles of 128 columns (common/column_sum_rule.h).
void cast_dbias(const Tensor& x, const Tensor& out, const Tensor& dbias, const Workspace& workspace, Stream stream);

// The stacked casts: the qkv projection's output gradient from the attention's dq, dk and dv as they come, with no
// stack in between. `parts` are `count` (1 to 3) tensors of one dtype and one shape [rows, cols], each row
// Tensor::row_stride elements after the one before (0: cols), read as the columns of one x [rows, count · cols] side by
// side (parts[0]'s first); they must not overlap the outputs. stacked_cast_dbias is cast_dbias of that x with out
// required (the stacked copy the GEMMs read); stacked_cast_transpose_dbias_to_fp8 is cast_transpose_dbias_to_fp8 of it,
// with dbias.data null meaning no sums (then the workspace is not looked at). The results are those of the dense call
// on x bit for bit, the kernel chosen as for x with x's alignment replaced by every part's (its data and its row
// stride in bytes) and the vector not crossing a part (cols a multiple of its elements). One launch each (two where the
// dense call takes two), in place of a stack and a cast.
void stacked_cast_dbias(const Tensor* parts, std::size_t count, const Tensor& out, const Tensor& dbias, const Workspace& workspace,
                        Stream stream);
void stacked_cast_transpose_dbias_to_fp8(const Tensor* parts, std::size_t count, const Tensor& out, const Tensor& dbias,
                                         const Workspace& workspace, Stream stream);

// out [cols, rows] = the transpose of x [rows, cols], copied as bits; out.dtype is x's, of 1, 2 or 4 bytes. One
// launch.
void transpose(const Tensor& x, const Tensor& out, Stream stream);

// Float8BlockScaling's cast, as core/fp8/BlockScaling.h defines it (the reference it is checked against): x
// [rows, cols] in blocks of 1 × 128 (out.scale_mode Block1x128: activations and gradients) or 128 × 128
// (Block128x128: weights); the last block of a row or column is shorter. Per block, amax = max |x| (NaN wins),
// scale = fp8_max / amax (FLT_MAX on overflow), rounded down to a power of two when `power_of_two`, and 1 when
// amax is 0, inf or NaN; out.data = fp8(x · scale) as cast_to_fp8, out.scale_inv (required) = 1 / scale in
// cuBLASLt's layout (tensor.h, ScaleMode; padding entries written with 1), so no GEMM re-lays them out. Optional,
// from the same read of x: out.transposed [cols, rows] with out.transposed_scale_inv (they come together), cast in
// blocks along its own rows (Transformer Engine's columnwise copy: 128 consecutive rows of one column of x per
// 1×128 block; 128×128 tiles keep the tile's scale); max |x| combined into out.amax[0] as cast_to_fp8 does; and
// dbias [1, cols] float32 (data null: not wanted) = the column sums of x, float32 math in a fixed order: per 128-row
// tile of x, each column's partial sum (0 + rows 0-15 in order, then 16-31, ..., each group of 16 rows summed from
// 0 and the 8 groups added in order), then the tiles' partial sums in order from 0, through dbias_workspace
// (block_cast_dbias_workspace_bytes, 4-byte aligned), which keeps the tiles' partial rows. One launch (one thread
// block per 128 × 128 tile); two with dbias where x has more than 2048 tiles of 128 columns.
void block_cast_to_fp8(const Tensor& x, const Tensor& out, bool power_of_two, const Tensor& dbias,
                       const Workspace& dbias_workspace, Stream stream);
)

namespace tewb::kernels {

// The scale layout of a block cast with `block_rows` rows per block (1 or 128).
constexpr ScaleMode block_scale_mode(int block_rows) {
    return block_rows == 1 ? ScaleMode::Block1x128 : ScaleMode::Block128x128;
}

// The scratch the entry points above need, on the device and the host alike.
std::size_t cast_transpose_dbias_workspace_bytes(std::size_t rows, std::size_t cols);
std::size_t cast_dbias_workspace_bytes(std::size_t rows, std::size_t cols);
// One float32 row of partial column sums per 128-row tile of x (at least one).
std::size_t block_cast_dbias_workspace_bytes(std::size_t rows, std::size_t cols);

// One element through the kernels' conversion, on the host: the reference the casts are checked against.
std::uint8_t cast_one_to_fp8(float x, float scale, Fp8Type type);

}  // namespace tewb::kernels

// The argument checks both implementations run first (cast_checks.cpp). Each fails with KernelError "<call>: <what>";
// a call with nothing to do passes after the checks that do not depend on the data, and the caller returns.
namespace tewb::kernels::detail {
void check_cast(const char* call, const Tensor& x, const Tensor& out);
void check_cast_transpose(const char* call, const Tensor& x, const Tensor& out);
void check_cast_transpose_dbias(const char* call, const Tensor& x, const Tensor& out, const Tensor& dbias,
                                const Workspace& workspace);
void check_cast_dbias(const char* call, const Tensor& x, const Tensor& out, const Tensor& dbias, const Workspace& workspace);
void check_transpose(const char* call, const Tensor& x, const Tensor& out);
// The stacked casts' checks; each returns x as the dense call would see it (shape and dtype; data is parts[0]'s).
Tensor check_stacked_cast_dbias(const char* call, const Tensor* parts, std::size_t count, const Tensor& out, const Tensor& dbias,
                                const Workspace& workspace);
Tensor check_stacked_cast_transpose_dbias(const char* call, const Tensor* parts, std::size_t count, const Tensor& out,
                                          const Tensor& dbias, const Workspace& workspace);
// Every part's data and row start aligned to `bytes` (its row stride in bytes a multiple of it).
bool stacked_parts_aligned(const Tensor* parts, std::size_t count, std::size_t bytes);
void check_block_cast(const char* call, const Tensor& x, const Tensor& out, const Tensor& dbias,
                      const Workspace& dbias_workspace);
// 1 for Block1x128, 128 for Block128x128.
int block_rows(const Tensor& out);
}  // namespace tewb::kernels::detail

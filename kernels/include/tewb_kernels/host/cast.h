#pragma once

#include <cstddef>

#include "tewb_kernels/block_cast_types.h"
#include "tewb_kernels/dtype.h"
#include "tewb_kernels/fp8_output.h"
#include "tewb_kernels/fp8_type.h"
#include "tewb_kernels/tensor_ref.h"

// The casts of tewb_kernels/cast.h over host memory, bit for bit the kernels' results: the same float32
// product x · scale, CUDA's float-to-FP8 conversion (common/host_numbers.h), the same amax rule and the
// same launch count. Every pointer is a host pointer; the argument rules are the kernels' own
// (cast/cast_arguments.h), with "tewb::kernels::host::<name>" in the message.
namespace tewb::kernels::host {

// out[i] = fp8(x[i] · *scale). When amax is not null, max |x| (as the bits of |x|: a NaN ranks above inf)
// is combined into amax[0] as the kernel's atomicMax on its bits does: the larger bit pattern is kept, so
// a NaN wins. One launch.
void cast_to_fp8(const void* x, DType dtype, std::size_t n, const float* scale, void* out, Fp8Type out_type, float* amax);

// out = fp8(x · scale) as [rows, cols], out_t its transpose [cols, rows]; amax as above. One launch.
void cast_transpose_to_fp8(const void* x, DType dtype, std::size_t rows, std::size_t cols, const float* scale, void* out,
                           void* out_t, Fp8Type out_type, float* amax);

// The same value as tewb::kernels::cast_transpose_dbias_workspace_bytes.
std::size_t cast_transpose_dbias_workspace_bytes(std::size_t rows, std::size_t cols);

// cast_transpose_to_fp8 and dbias[c] = the sum of column c of x, bit for bit the GPU's: the same partial
// sums in the same order, written to `workspace` (host memory, chunks × cols float32, as on the GPU), then
// summed over the chunks in order and stored in dbias_dtype. The GPU's order depends on which kernel runs,
// and that on the shape and on the pointers' alignment (the vectorised kernel for float32 and bfloat16
// input with rows % 8 == 0, cols % (16 / element size) == 0, x 16-byte, out (16 / element size)-byte and
// out_t 8-byte aligned); the host follows the same choice from the pointers it gets, so buffers aligned
// as the GPU's (cudaMalloc gives 256 bytes) give the GPU's sums. A NaN sum is stored as the GPU's
// canonical NaN (0x7fffffff; bfloat16 0x7fff). One launch (the last block of each column tile finishes its
// sums), two where the kernel's grid has more column tiles than the arrival counters hold
// (common/column_sum_rule.h: over 2048 tiles of 64 columns for the vectorised kernel, of 32 for the other).
void cast_transpose_dbias_to_fp8(const ConstTensorRef& x, const Fp8Output& out, const TensorRef& dbias,
                                 const Workspace& workspace);

// The same value as tewb::kernels::cast_dbias_workspace_bytes.
std::size_t cast_dbias_workspace_bytes(std::size_t rows, std::size_t cols);

// tewb::kernels::cast_dbias bit for bit: out = x in out.dtype (when out.data is not null), dbias = the column
// sums of x in the kernel's order (cast_dbias_geometry.h: per block row of the grid, each thread row's sum over
// its rows in order, then 0 + thread row 0 + ... + 7, then the block rows in order), the partial rows left in
// `workspace` as the kernel leaves them; a NaN sum stored as the GPU's canonical NaN. Same launch count.
void cast_dbias(const ConstTensorRef& x, const TensorRef& out, const TensorRef& dbias, const Workspace& workspace);

// out [cols, rows] = the transpose of x [rows, cols]; elements of 1, 2 or 4 bytes, copied as bits. One launch.
void transpose(const void* x, std::size_t element_bytes, std::size_t rows, std::size_t cols, void* out);

// Float8BlockScaling's cast (tewb_kernels/cast.h): per block of block_rows × 128 (the last ones shorter),
// amax = max |x| with NaN winning, scale = fp8_max / amax (FLT_MAX when that is inf), the bits below the
// exponent cleared when power_of_two, and 1 when amax is 0, inf or NaN; data = fp8(x · scale), scale_inv =
// 1 / scale in cuBLASLt's layout with padding 1; the transposed copy, its scales and the tensor's amax when
// asked (block_cast_types.h). Bit-exact with the CUDA kernel. With out.dbias, the bias gradient in the
// kernel's order (block_cast_types.h), bit for bit the GPU's (a NaN sum stored as its canonical 0x7fffffff),
// the tiles' partial rows left in out.dbias_workspace as the kernel leaves them. One launch; two with dbias
// where x has more than 2048 tiles of 128 columns (common/column_sum_rule.h).
void block_cast_to_fp8(const void* x, DType dtype, std::size_t rows, std::size_t cols, int block_rows, bool power_of_two,
                       const BlockCastOutput& out);

// The same value as tewb::kernels::block_cast_dbias_workspace_bytes.
std::size_t block_cast_dbias_workspace_bytes(std::size_t rows, std::size_t cols);

}  // namespace tewb::kernels::host

#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "tewb_kernels/block_cast_types.h"
#include "tewb_kernels/dtype.h"
#include "tewb_kernels/fp8_output.h"
#include "tewb_kernels/fp8_type.h"
#include "tewb_kernels/tensor_ref.h"

namespace tewb::kernels {

// FP8 casts as core's reference defines them: out = fp8(x * scale), float32 product, rounded to nearest
// even, values beyond ±fp8_max (inf included) saturated to ±fp8_max, NaN kept NaN. `scale` points to one
// float32 on the device (the slot's scale). When `amax` is not null, max |x| of the input (before
// scaling) is combined into amax[0]: the larger of the two is kept and a NaN wins, so several casts may
// record into one staging entry, which must hold 0 or more (or NaN) before the first. All pointers are
// device pointers; x is aligned to its element size. n == 0 (or rows or cols == 0) does nothing.
void cast_to_fp8(const void* x, DType dtype, std::size_t n, const float* scale, void* out, Fp8Type out_type, float* amax,
                 cudaStream_t stream);

// x is [rows, cols] row-major: out gets its cast ([rows, cols]) and out_t the cast of its transpose
// ([cols, rows]), in one pass; amax as above. FP8 GEMMs take operands in TN layout only, so backward
// needs both.
void cast_transpose_to_fp8(const void* x, DType dtype, std::size_t rows, std::size_t cols, const float* scale, void* out,
                           void* out_t, Fp8Type out_type, float* amax, cudaStream_t stream);

// Scratch for cast_transpose_dbias_to_fp8's partial column sums (per row chunk; added up in the same launch).
std::size_t cast_transpose_dbias_workspace_bytes(std::size_t rows, std::size_t cols);

// cast_transpose_to_fp8 of x [rows, cols] into out.data and out.transposed (required here; named out and out_t
// in errors) with out.scale, out.type and out.amax, and, from the same read of x, dbias[c] = the sum of column
// c of x (float32 accumulation; dbias [1, cols] float32 or bfloat16): a Linear's FP8 output gradient, its
// transposed copy and its bias gradient in one pass (Transformer Engine's cast_transpose_dbias). The sums go
// through `workspace` (cast_transpose_dbias_workspace_bytes) in a fixed order, so they do not vary between runs.
void cast_transpose_dbias_to_fp8(const ConstTensorRef& x, const Fp8Output& out, const TensorRef& dbias,
                                 const Workspace& workspace, cudaStream_t stream);

// Scratch for cast_dbias's partial column sums (one float32 row per block row of its grid).
std::size_t cast_dbias_workspace_bytes(std::size_t rows, std::size_t cols);

// A Linear's output gradient for its BF16 (or float32) GEMMs, one pass over x [rows, cols] (float32 or
// bfloat16): out = x in out.dtype (float32 or bfloat16, [rows, cols], rounded to nearest even; not written
// when out.data is null: the sums alone) and dbias ([1, cols], float32 or bfloat16) = the column sums of x,
// float32 accumulation in a fixed order (cast_dbias_geometry.h) through `workspace`
// (cast_dbias_workspace_bytes), so they do not vary between runs. It stands for a dtype cast plus
// cuBLASLt's BGRADB epilogue, whose helper kernel and memset it replaces. One launch; two where x has more
// than 2048 tiles of 128 columns (common/column_sum_rule.h). Device pointers aligned to their element size.
void cast_dbias(const ConstTensorRef& x, const TensorRef& out, const TensorRef& dbias, const Workspace& workspace,
                cudaStream_t stream);

// out ([cols, rows]) = the transpose of x ([rows, cols]); elements of 1, 2 or 4 bytes.
void transpose(const void* x, std::size_t element_bytes, std::size_t rows, std::size_t cols, void* out,
               cudaStream_t stream);

// Float8BlockScaling's cast, as core/fp8/BlockScaling.h defines it (the reference it is checked against):
// x [rows, cols] in blocks of block_rows × 128 (block_rows 1: activations and gradients; 128: weights;
// the last block of a row or column is shorter). Per block, amax = max |x| (NaN wins), scale = fp8_max /
// amax (FLT_MAX on overflow), rounded down to a power of two when `power_of_two`, and 1 when amax is 0,
// inf or NaN; data = fp8(x · scale) as cast_to_fp8, scale_inv = 1 / scale in cuBLASLt's layout
// (block_cast_types.h). One launch writes both orientations, their scales and the tensor's amax, reading
// x once (one thread block per 128 × 128 tile); with out.dbias also the bias gradient (block_cast_types.h).
// Device pointers; x aligned to its element size, scale arrays, dbias and its workspace 4-byte aligned;
// rows or cols 0 does nothing. The modules' cast under --recipe block (FusedOps); `te-bench selftest`
// checks it.
void block_cast_to_fp8(const void* x, DType dtype, std::size_t rows, std::size_t cols, int block_rows, bool power_of_two,
                       const BlockCastOutput& out, cudaStream_t stream);

// Scratch for block_cast_to_fp8's bias gradient (BlockCastOutput::dbias): one float32 row of partial column
// sums per 128-row tile of x.
std::size_t block_cast_dbias_workspace_bytes(std::size_t rows, std::size_t cols);

// One element through the kernels' conversion, on the host: the reference the casts are checked against.
std::uint8_t cast_one_to_fp8(float x, float scale, Fp8Type type);

}  // namespace tewb::kernels

#pragma once

#include <ATen/core/Tensor.h>

#include "core/fp8/Fp8Format.h"

namespace tewb {

// Float8BlockScaling's quantization (Transformer Engine's third recipe on Hopper): one float32 scale per
// block instead of one per tensor. Activations and gradients use 1×128 blocks (128 consecutive elements
// of a row, along the GEMM's inner dimension), weights 128×128 tiles. This is the reference
// implementation, in LibTorch ops on any device: the oracle for kernels, and how the inspector computes
// what block scaling would have cost a tensor.
struct BlockShape {
    int rows = 1;
    int cols = 128;
    friend bool operator==(const BlockShape&, const BlockShape&) = default;
};
inline constexpr BlockShape kActivationBlock{1, 128};
inline constexpr BlockShape kWeightBlock{128, 128};

// Per block: amax = max |x| over the block; scale = fp8_max / amax, rounded down to a power of two when
// `power_of_two` (the default in Transformer Engine: the scale then changes no mantissa bit and its
// reciprocal is exact), and 1 when amax is 0, inf or NaN. The data is x·scale clamped to ±fp8_max and
// cast (round to nearest even); `scale_inv` = 1 / scale, [ceil(rows / block.rows), ceil(cols / block.cols)].
// Shapes that are not multiples of the block are handled exactly: the last block of a row or column is
// simply shorter (no padding reaches the data).
struct BlockQuantized {
    at::Tensor data;       // FP8, the shape of x
    at::Tensor scale_inv;  // float32 per block
    BlockShape block;
    Fp8Dtype dtype = Fp8Dtype::E4M3;
};

// `x` must be 2-D (any float dtype); throws ConfigError otherwise.
BlockQuantized block_quantize(const at::Tensor& x, BlockShape block, Fp8Dtype dtype, bool power_of_two = true);
// The dequantized values in float32 (data · scale_inv of each element's block).
at::Tensor block_dequantize(const BlockQuantized& q);
// a [M, K] (1×128 blocks) times b [N, K] (128×128 blocks) transposed, emulated in float32: the products
// of dequantized values summed in float32 (what a block-scaled FP8 GEMM computes, up to summation order).
at::Tensor block_gemm_reference(const BlockQuantized& a, const BlockQuantized& b);

// block_quantize's scale_inv ([ceil(rows / block.rows), ceil(cols / 128)]) in the layout cuBLASLt's
// block-scaled FP8 GEMMs read (tewb_kernels/gemm_types.h, ScaleMode), float32 and contiguous: for 1×128 blocks
// the transpose, [cols / 128][round_up(rows, 4)] (each k block's scales for all rows side by side); for
// 128×128 tiles [ceil(rows / 128)][round_up(cols / 128, 4)]. Scales that are already a view of that layout
// (empty_block_scales, as the block cast kernel writes them) come back as the laid-out buffer, with no copy;
// others are copied with 1 in the padding (cuBLASLt reads none of it). Throws ConfigError for a block shape
// cuBLASLt has no mode for.
at::Tensor block_scales_for_gemm(const at::Tensor& scale_inv, BlockShape block);

// Room for the scales of x [rows, cols] in `block`s, laid out for cuBLASLt (as block_scales_for_gemm
// returns them), seen as block_quantize's [ceil(rows / block.rows), ceil(cols / 128)] scale_inv: a strided
// view, so the reference code reads it as any scale_inv and a GEMM takes the buffer as it is.
at::Tensor empty_block_scales(std::int64_t rows, std::int64_t cols, BlockShape block, const at::TensorOptions& options);

// What the FP8 statistics show as a block-scaled slot's scale: the scale of the block holding the slot's
// amax (the smallest scale of any block that has values), from the tensor's amax alone; the recipe
// kernel's block rules (tewb_kernels/recipe_rule.h) compute the same at the scale update.
at::Tensor block_statistics_scale(const at::Tensor& amax, float fp8_max, bool power_of_two);

// max |x| per block of x [rows, cols] in float32, [ceil(rows / block.rows), ceil(cols / block.cols)] (the last blocks
// of a row or column are shorter; a NaN wins).
at::Tensor block_abs_max(const at::Tensor& x, BlockShape block);

// The inspector's histogram bins (Fp8ScaleHistogram) of blocks: for each block's `factor` (what its stored values are
// multiplied by on the way back) the bin of floor(log2 factor) from Fp8ScaleHistogram::kLowestExponent, clamped to
// the end bins; Fp8ScaleHistogram::kBins for a block whose `block_amax` is 0 or not finite (it has no scale). int64,
// the shape of `factor`; no device sync.
at::Tensor block_scale_bins(const at::Tensor& factor, const at::Tensor& block_amax);

// Each block's value (e.g. its scale) repeated over the block's elements, cropped to rows × cols.
at::Tensor expand_blocks(const at::Tensor& per_block, BlockShape block, std::int64_t rows, std::int64_t cols);

// The largest power of two not above each element of a float32 tensor of normal values, exactly.
at::Tensor power_of_two_at_or_below(const at::Tensor& scale);

// The cast of Float8CurrentScaling: fp8_max / amax elementwise in float32 (1 for amax 0, inf or NaN;
// FLT_MAX on overflow), bit-equal to current_scale() on the host. Block scaling applies it per block.
at::Tensor current_scale_tensor(const at::Tensor& amax, float fp8_max);

// Per-tensor (current scaling) round trip, for comparisons: scale = fp8_max / amax (1 for 0, inf, NaN),
// cast, back to float32.
at::Tensor tensor_quantize_dequantize(const at::Tensor& x, Fp8Dtype dtype);

}  // namespace tewb

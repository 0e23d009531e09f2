#pragma once

#include <cstddef>

#include "tewb_kernels/entry_points.h"
#include "tewb_kernels/tensor.h"

TEWB_ENTRY_POINTS(
// cast_transpose_to_fp8 (cast.h) of `count` tensors x[i] into out[i], each with its own scale, outputs and amax, in
// one launch per kCastMultiItemsPerLaunch non-empty tensors (more only where their 64 x 64 tiles exceed a grid's
// 2^31 - 1 blocks) instead of one each: a model's weights cast to FP8 once per step (the values are
// cast_transpose_to_fp8's, bit for bit). The arrays are host memory; no output overlaps another's. Empty tensors
// are skipped.
void cast_transpose_multi_to_fp8(const Tensor* x, const Tensor* out, std::size_t count, Stream stream);

// block_cast_to_fp8 (cast.h) of `count` tensors of one dtype, one block shape (out[i].scale_mode) and one scale rule,
// each with its own outputs and amax, in one launch per kCastMultiItemsPerLaunch non-empty tensors (more only past a
// grid's 2^31 - 1 tiles of 128 x 128): a model's weights under Float8BlockScaling once per step. Values bit for bit
// block_cast_to_fp8's; no bias gradients.
void block_cast_multi_to_fp8(const Tensor* x, const Tensor* out, std::size_t count, bool power_of_two, Stream stream);
)

namespace tewb::kernels {

// Tensors one launch takes at most: they travel in the kernel's parameters (about 4 KiB for the cast + transpose,
// 6 KiB for the block cast: beyond the classic 4 KiB, so CUDA 12.1 or later, which takes up to 32 KiB on every
// architecture this project builds for), and the 48 weights of a 12-layer model fit in one.
inline constexpr std::size_t kCastMultiItemsPerLaunch = 64;

}  // namespace tewb::kernels

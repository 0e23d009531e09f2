#pragma once

#include "tewb_kernels/entry_points.h"
#include "tewb_kernels/tensor.h"

namespace tewb::kernels {

// One tensor of abs_max_current_scale_multi: abs_max_current_scale's arguments.
struct CurrentScaleItem {
    Tensor x;
    float numerator = 0.0f;
    Tensor scale;
    Tensor scale_inv;
    Tensor staging;
};

// Current scaling's scale of a tensor that a producing kernel writes (the normalizations' *_current_scale forms): what
// abs_max_current_scale writes from the tensor's amax (scale, scale_inv, staging with data null: none), the amax taken by
// the producer over the values as it stores them.
struct CurrentScaleTarget {
    float numerator = 0.0f;
    Tensor scale;
    Tensor scale_inv;
    Tensor staging;
};

// Tensors one launch of abs_max_current_scale_multi takes at most (they travel in the kernel's parameters, as the
// multi-tensor casts' do: CUDA 12.1 or later). The 48 weights of a 12-layer model fit in one.
inline constexpr std::size_t kAbsMaxItemsPerLaunch = 64;

}  // namespace tewb::kernels

TEWB_ENTRY_POINTS(
// x.amax[0] = max |x| over x's rows * cols elements, as float32. x: float32, bfloat16 or float16, aligned to its
// element size, data null only when it has no elements; x.amax required, 4-byte aligned. A NaN anywhere makes
// the result NaN (the FP8 recipe must see it, not skip it); no elements give 0. Exact on both implementations: a
// max does not depend on order (the host twin writes, for a NaN, the largest |x| bit pattern, as the kernel's
// atomicMax leaves it). One launch, no memset (the blocks combine in a scratch word the last block clears again, so
// calls must not run concurrently: one stream, as a training run issues them); with no elements it writes 0.
void abs_max(const Tensor& x, Stream stream);

// Current scaling's step before its cast in one launch: abs_max of x and, from that amax, what current_scale
// (recipe.h) writes, by the launch's last block: scale = numerator / amax (FLT_MAX on overflow; 1 when the amax is 0,
// inf or NaN), scale_inv = 1 / scale and, when staging.data is set, staging = max(staging, amax) with NaN winning.
// x as abs_max takes it, except that x.amax is optional here (null: the amax goes only into the scale and staging);
// scale, scale_inv and staging as current_scale takes them, none of them x.amax. Bit for bit abs_max then
// current_scale (both implementations), one launch fewer; the same one-stream rule as abs_max. A NaN amax gives a NaN
// staging entry whose payload may differ between a GPU and the host twin (the GPU's float addition returns its
// canonical NaN, the host's keeps the operand's), as current_scale's does.
void abs_max_current_scale(const Tensor& x, float numerator, const Tensor& scale, const Tensor& scale_inv, const Tensor& staging,
                           Stream stream);

// abs_max_current_scale of `count` tensors (a model's weights under current scaling), in one launch per
// kAbsMaxItemsPerLaunch of them instead of one each: each its own amax, scale, scale_inv and staging entry, the values
// bit for bit those of abs_max_current_scale on each. The array is host memory; no tensor's outputs may be another's.
// A tensor without elements gets the scale of amax 0 (1), as abs_max_current_scale gives it.
void abs_max_current_scale_multi(const CurrentScaleItem* items, std::size_t count, Stream stream);
)

#pragma once

#include "tewb_kernels/entry_points.h"
#include "tewb_kernels/tensor.h"

TEWB_ENTRY_POINTS(
// x.amax[0] = max |x| over x's rows * cols elements, as float32. x: float32, bfloat16 or float16, aligned to its
// element size, data null only when it has no elements; x.amax required, 4-byte aligned. A NaN anywhere makes
// the result NaN (the FP8 recipe must see it, not skip it); no elements give 0. Exact on both implementations: a
// max does not depend on order (the host twin writes, for a NaN, the largest |x| bit pattern, as the kernel's
// atomicMax leaves it). One launch, no memset (the blocks combine in a scratch word the last block clears again, so
// calls must not run concurrently: one stream, as a training run issues them); with no elements it writes 0.
void abs_max(const Tensor& x, Stream stream);
)

namespace tewb::kernels::detail {
void check_abs_max(const char* call, const Tensor& x);
}  // namespace tewb::kernels::detail

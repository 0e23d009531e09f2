#pragma once

#include <cstddef>

#include "tewb_kernels/adamw_types.h"

namespace tewb::kernels::host {

// tewb::kernels::adamw_step (tewb_kernels/adamw.h) over host memory: the same arguments, checks and
// semantics, minus the stream; errors name "tewb::kernels::host::adamw_step". Every element bit for bit the
// kernel's (the arithmetic is shared: optimizer/adamw_math.h; beta^t through the double pow, which host and
// GPU round to the same float32 but within 2^-28 of a rounding boundary), the FP8 outputs bit for bit what
// host::cast_transpose_multi_to_fp8 writes from the updated parameters (the same conversion,
// common/host_numbers.h, and amax rule), *step advanced once, and the kernel's launch count:
// adamw_launches(tensors with elements), FP8 outputs or not.
void adamw_step(const AdamWTensor* tensors, std::size_t count, float* step, double lr, double beta1, double beta2,
                double weight_decay, double eps);

}  // namespace tewb::kernels::host

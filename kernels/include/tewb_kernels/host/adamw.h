#pragma once

#include <cstddef>

#include "tewb_kernels/adamw_types.h"

namespace tewb::kernels::host {

// tewb::kernels::adamw_step (tewb_kernels/adamw.h) over host memory: the same arguments, checks and
// semantics, minus the stream; errors name "tewb::kernels::host::adamw_step". Every element bit for bit the
// kernel's (the arithmetic is shared: optimizer/adamw_math.h; beta^t through the double pow, which host and
// GPU round to the same float32 but within 2^-28 of a rounding boundary), *step advanced once, and the
// kernel's launch count: adamw_launches(tensors with elements).
void adamw_step(const AdamWTensor* tensors, std::size_t count, float* step, double lr, double beta1, double beta2,
                double weight_decay, double eps);

}  // namespace tewb::kernels::host

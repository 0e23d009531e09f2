#pragma once

#include "tewb_kernels/recipe_rule.h"

namespace tewb::kernels::host {

// update_scaling (tewb_kernels/recipe.h) over host memory, one slot after another: bit for bit the
// kernel's result (the arithmetic is shared: recipe/recipe_math.h), one launch counted.
void update_scaling(float* history, float* scale, float* scale_inv, int slots, int history_len, float numerator,
                    ScalingRule rule, const ScaleUpdateRecord& record, const SlotStrides& strides);

// current_scale (tewb_kernels/recipe.h) on host memory, one launch counted.
void current_scale(const float* amax, float numerator, float* scale, float* scale_inv, float* staging);

}  // namespace tewb::kernels::host

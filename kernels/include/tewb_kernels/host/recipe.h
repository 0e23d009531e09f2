#pragma once

#include "tewb_kernels/recipe_rule.h"

namespace tewb::kernels::host {

// update_scaling (tewb_kernels/recipe.h) over host memory, one slot after another: bit for bit the
// kernel's result (the arithmetic is shared: recipe/recipe_math.h), one launch counted.
void update_scaling(float* history, float* scale, float* scale_inv, int slots, int history_len, float numerator,
                    ScalingRule rule, const ScaleUpdateRecord& record);

}  // namespace tewb::kernels::host

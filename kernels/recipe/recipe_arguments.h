#pragma once

#include "tewb_kernels/recipe_rule.h"

namespace tewb::kernels::detail {

// The scale update's argument rules, one copy for the kernel and the host implementation.
void check_recipe_arguments(const char* call, const float* history, const float* scale, const float* scale_inv, int slots,
                            int history_len, float numerator, ScalingRule rule, const ScaleUpdateRecord& record);

}  // namespace tewb::kernels::detail

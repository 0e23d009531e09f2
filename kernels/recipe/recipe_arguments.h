#pragma once

#include "tewb_kernels/recipe_rule.h"

namespace tewb::kernels::detail {

// The scale update's argument rules, one copy for the kernel and the host implementation. Returns the strides with
// packed (0) resolved: history_len and 1.
SlotStrides check_recipe_arguments(const char* call, const float* history, const float* scale, const float* scale_inv,
                                   int slots, int history_len, float numerator, ScalingRule rule,
                                   const ScaleUpdateRecord& record, const SlotStrides& strides);

void check_current_scale_arguments(const char* call, const float* amax, float numerator, const float* scale,
                                   const float* scale_inv, const float* staging);

}  // namespace tewb::kernels::detail

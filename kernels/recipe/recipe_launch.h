#pragma once

#include <cuda_runtime_api.h>

#include "tewb_kernels/recipe.h"

namespace tewb::kernels::detail {

// Arguments already checked by update_scaling().
void launch_update_scaling(float* history, float* scale, float* scale_inv, int slots, int history_len, float numerator,
                           ScalingRule rule, const ScaleUpdateRecord& record, const SlotStrides& strides, cudaStream_t stream);

void launch_current_scale(const float* amax, float numerator, float* scale, float* scale_inv, float* staging,
                          cudaStream_t stream);

}  // namespace tewb::kernels::detail

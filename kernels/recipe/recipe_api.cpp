#include "recipe/recipe_arguments.h"
#include "recipe/recipe_launch.h"
#include "tewb_kernels/recipe.h"

namespace tewb::kernels {

void update_scaling(float* history, float* scale, float* scale_inv, int slots, int history_len, float numerator,
                    ScalingRule rule, const ScaleUpdateRecord& record, const SlotStrides& strides, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::update_scaling";
    const SlotStrides resolved =
        detail::check_recipe_arguments(call, history, scale, scale_inv, slots, history_len, numerator, rule, record, strides);
    if (slots == 0) return;
    detail::launch_update_scaling(history, scale, scale_inv, slots, history_len, numerator, rule, record, resolved, stream);
}

void current_scale(const float* amax, float numerator, float* scale, float* scale_inv, float* staging, cudaStream_t stream) {
    detail::check_current_scale_arguments("tewb::kernels::current_scale", amax, numerator, scale, scale_inv, staging);
    detail::launch_current_scale(amax, numerator, scale, scale_inv, staging, stream);
}

}  // namespace tewb::kernels

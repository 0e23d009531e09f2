#include "recipe/recipe_arguments.h"
#include "recipe/recipe_launch.h"
#include "tewb_kernels/recipe.h"

namespace tewb::kernels {

void update_scaling(float* history, float* scale, float* scale_inv, int slots, int history_len, float numerator,
                    ScalingRule rule, const ScaleUpdateRecord& record, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::update_scaling";
    detail::check_recipe_arguments(call, history, scale, scale_inv, slots, history_len, numerator, rule, record);
    if (slots == 0) return;
    detail::launch_update_scaling(history, scale, scale_inv, slots, history_len, numerator, rule, record, stream);
}

}  // namespace tewb::kernels

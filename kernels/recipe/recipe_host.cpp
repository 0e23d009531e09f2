#include <cstddef>

#include "common/fail.h"
#include "recipe/recipe_arguments.h"
#include "recipe/recipe_math.h"
#include "tewb_kernels/host/recipe.h"

namespace tewb::kernels::host {

void update_scaling(float* history, float* scale, float* scale_inv, int slots, int history_len, float numerator,
                    ScalingRule rule, const ScaleUpdateRecord& record, const SlotStrides& strides) {
    const SlotStrides resolved = detail::check_recipe_arguments("tewb::kernels::host::update_scaling", history, scale,
                                                                scale_inv, slots, history_len, numerator, rule, record, strides);
    if (slots == 0) return;
    for (int slot = 0; slot < slots; ++slot) {
        float* h = history + static_cast<std::ptrdiff_t>(slot) * resolved.history;
        const std::ptrdiff_t s = static_cast<std::ptrdiff_t>(slot) * resolved.scale;
        const float staged = h[0];
        const bool block = rule == ScalingRule::BlockPowerOfTwo || rule == ScalingRule::BlockExact;
        float* row = record.statistics != nullptr ? record.statistics + static_cast<std::ptrdiff_t>(slot) * record.statistics_stride : nullptr;
        if (row != nullptr) {
            row[0] = staged;
            if (!block) row[1] = scale[s];
        }
        if (record.kept_scale_inv != nullptr) record.kept_scale_inv[s] = scale_inv[s];
        if (block) {
            scale[s] = detail::block_slot_scale(numerator, staged, rule == ScalingRule::BlockPowerOfTwo);
            if (row != nullptr) row[1] = scale[s];
        } else if (rule != ScalingRule::Current && detail::slot_ran(staged)) {
            float window = staged;
            if (rule == ScalingRule::DelayedMax) {
                for (int i = 1; i < history_len; ++i) window = detail::window_max(window, h[i]);
            }
            for (int i = 1; i + 1 < history_len; ++i) h[i] = h[i + 1];
            if (history_len > 1) h[history_len - 1] = staged;
            scale[s] = detail::next_scale(numerator, window, scale[s]);
        }
        h[0] = 0.0f;
        scale_inv[s] = 1.0f / scale[s];
    }
    detail::note_launch();
}

void current_scale(const float* amax, float numerator, float* scale, float* scale_inv, float* staging) {
    detail::check_current_scale_arguments("tewb::kernels::host::current_scale", amax, numerator, scale, scale_inv, staging);
    detail::current_scale_values(*amax, numerator, scale, scale_inv, staging);
    detail::note_launch();
}

}  // namespace tewb::kernels::host

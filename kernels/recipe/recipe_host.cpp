#include <cstddef>

#include "common/fail.h"
#include "recipe/recipe_call.h"
#include "recipe/recipe_math.h"
#include "tewb_kernels/recipe.h"

namespace tewb::kernels::host {

void update_scaling(const Tensor& history_in, const Tensor& scale_in, const Tensor& scale_inv_in, float numerator_in,
                    ScalingRule rule_in, const ScaleUpdateRecord& record_in, Stream) {
    const auto a = detail::scale_update_call("tewb::kernels::host::update_scaling", history_in, scale_in, scale_inv_in,
                                             numerator_in, rule_in, record_in);
    if (!a) return;
    float* history = a->history;
    float* scale = a->scale;
    float* scale_inv = a->scale_inv;
    const int slots = a->slots;
    const int history_len = a->history_len;
    const float numerator = a->numerator;
    const ScalingRule rule = a->rule;
    const detail::RecordPointers& record = a->record;
    const detail::SlotStrides& resolved = a->strides;
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

void current_scale(const Tensor& amax, float numerator, const Tensor& scale, const Tensor& scale_inv, const Tensor& staging,
                   Stream) {
    const auto a = detail::current_scale_call("tewb::kernels::host::current_scale", amax, numerator, scale, scale_inv, staging);
    detail::current_scale_values(*a.amax, a.numerator, a.scale, a.scale_inv, a.staging);
    detail::note_launch();
}

}  // namespace tewb::kernels::host

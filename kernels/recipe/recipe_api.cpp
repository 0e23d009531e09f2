#include <string>

#include "common/arguments.h"
#include "common/check.h"
#include "recipe/recipe_launch.h"
#include "recipe/recipe_math.h"
#include "tewb_kernels/recipe.h"

namespace tewb::kernels {

namespace {

constexpr int kMaxHistoryLen = 65536;

void check_arguments(const char* call, const float* history, const float* scale, const float* scale_inv, int slots,
                     int history_len, float numerator, ScalingRule rule) {
    if (slots < 0) detail::fail(call, "slots = " + std::to_string(slots) + "; allowed: 0 or more");
    if (history_len < 1 || history_len > kMaxHistoryLen) {
        detail::fail(call, "history_len = " + std::to_string(history_len) + "; allowed: 1 to " + std::to_string(kMaxHistoryLen));
    }
    if (rule != ScalingRule::DelayedMax && rule != ScalingRule::DelayedMostRecent && rule != ScalingRule::Current) {
        detail::fail(call, "unknown scaling rule (allowed: delayed max, delayed most recent, current)");
    }
    if (!detail::is_finite(numerator) || !(numerator > 0.0f)) {
        detail::fail(call, "numerator = " + std::to_string(numerator) + "; allowed: a finite value above 0 (fp8_max / 2^margin)");
    }
    if (slots == 0) return;
    detail::check_buffer(call, history, "history", alignof(float));
    detail::check_buffer(call, scale, "scale", alignof(float));
    detail::check_buffer(call, scale_inv, "scale_inv", alignof(float));
}

}  // namespace

void update_scaling(float* history, float* scale, float* scale_inv, int slots, int history_len, float numerator,
                    ScalingRule rule, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::update_scaling";
    check_arguments(call, history, scale, scale_inv, slots, history_len, numerator, rule);
    if (slots == 0) return;
    detail::launch_update_scaling(history, scale, scale_inv, slots, history_len, numerator, rule, stream);
}

void update_scaling_on_host(float* history, float* scale, float* scale_inv, int slots, int history_len, float numerator,
                            ScalingRule rule) {
    check_arguments("tewb::kernels::update_scaling_on_host", history, scale, scale_inv, slots, history_len, numerator, rule);
    for (int s = 0; s < slots; ++s) {
        float* h = history + static_cast<std::ptrdiff_t>(s) * history_len;
        const float staged = h[0];
        if (rule != ScalingRule::Current && detail::slot_ran(staged)) {
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
}

}  // namespace tewb::kernels

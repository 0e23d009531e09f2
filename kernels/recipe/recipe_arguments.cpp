#include "recipe/recipe_arguments.h"

#include <string>

#include "common/arguments.h"
#include "common/fail.h"
#include "recipe/recipe_math.h"

namespace tewb::kernels::detail {

namespace {

constexpr int kMaxHistoryLen = 65536;
constexpr int kMaxStride = 1 << 20;  // floats between slots: far above any layout, far below int's overflow at 2^31 slots·stride

}  // namespace

SlotStrides check_recipe_arguments(const char* call, const float* history, const float* scale, const float* scale_inv,
                                   int slots, int history_len, float numerator, ScalingRule rule,
                                   const ScaleUpdateRecord& record, const SlotStrides& strides) {
    if (slots < 0) fail(call, "slots = " + std::to_string(slots) + "; allowed: 0 or more");
    if (history_len < 1 || history_len > kMaxHistoryLen) {
        fail(call, "history_len = " + std::to_string(history_len) + "; allowed: 1 to " + std::to_string(kMaxHistoryLen));
    }
    if (rule != ScalingRule::DelayedMax && rule != ScalingRule::DelayedMostRecent && rule != ScalingRule::Current &&
        rule != ScalingRule::BlockPowerOfTwo && rule != ScalingRule::BlockExact) {
        fail(call, "unknown scaling rule (allowed: delayed max, delayed most recent, current, block power of two, block exact)");
    }
    if (!is_finite(numerator) || !(numerator > 0.0f)) {
        fail(call, "numerator = " + std::to_string(numerator) + "; allowed: a finite value above 0 (fp8_max / 2^margin)");
    }
    if (record.statistics != nullptr && record.statistics_stride < 2) {
        fail(call, "statistics_stride = " + std::to_string(record.statistics_stride) + "; allowed: 2 or more (amax, scale)");
    }
    SlotStrides resolved{strides.history == 0 ? history_len : strides.history, strides.scale == 0 ? 1 : strides.scale};
    if (resolved.history < history_len || resolved.history > kMaxStride) {
        fail(call, "history stride = " + std::to_string(strides.history) + " with history_len = " + std::to_string(history_len) +
                       "; allowed: 0 (packed) or history_len to " + std::to_string(kMaxStride));
    }
    if (resolved.scale < 1 || resolved.scale > kMaxStride) {
        fail(call, "scale stride = " + std::to_string(strides.scale) + "; allowed: 0 (packed) or 1 to " + std::to_string(kMaxStride));
    }
    if (slots == 0) return resolved;
    check_buffer(call, history, "history", alignof(float));
    check_buffer(call, scale, "scale", alignof(float));
    check_buffer(call, scale_inv, "scale_inv", alignof(float));
    if (record.statistics != nullptr) check_buffer(call, record.statistics, "statistics", alignof(float));
    if (record.kept_scale_inv != nullptr) {
        check_buffer(call, record.kept_scale_inv, "kept_scale_inv", alignof(float));
        if (record.kept_scale_inv == scale_inv) fail(call, "kept_scale_inv and scale_inv are the same buffer");
    }
    return resolved;
}

void check_current_scale_arguments(const char* call, const float* amax, float numerator, const float* scale,
                                   const float* scale_inv, const float* staging) {
    if (!is_finite(numerator) || !(numerator > 0.0f)) {
        fail(call, "numerator = " + std::to_string(numerator) + "; allowed: a finite value above 0 (fp8_max / 2^margin)");
    }
    check_buffer(call, amax, "amax", alignof(float));
    check_buffer(call, scale, "scale", alignof(float));
    check_buffer(call, scale_inv, "scale_inv", alignof(float));
    if (staging != nullptr) check_buffer(call, staging, "staging", alignof(float));
    if (scale == scale_inv) fail(call, "scale and scale_inv are the same value");
}

}  // namespace tewb::kernels::detail

#include <limits>
#include <string>

#include "common/arguments.h"
#include "common/fail.h"
#include "recipe/recipe_call.h"
#include "recipe/recipe_math.h"

namespace tewb::kernels::detail {

namespace {

constexpr int kMaxHistoryLen = 65536;
constexpr int kMaxStride = 1 << 20;  // floats between slots: far above any layout, far below int's overflow at 2^31 slots·stride

SlotStrides check_recipe_arguments(const char* call, const float* history, const float* scale, const float* scale_inv,
                                   int slots, int history_len, float numerator, ScalingRule rule, const RecordPointers& record,
                                   const SlotStrides& strides) {
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

void check_current_scale_arguments(const char* call, float numerator, const float* scale, const float* scale_inv,
                                   const float* staging) {
    if (!is_finite(numerator) || !(numerator > 0.0f)) {
        fail(call, "numerator = " + std::to_string(numerator) + "; allowed: a finite value above 0 (fp8_max / 2^margin)");
    }
    check_buffer(call, scale, "scale", alignof(float));
    check_buffer(call, scale_inv, "scale_inv", alignof(float));
    if (staging != nullptr) check_buffer(call, staging, "staging", alignof(float));
    if (scale == scale_inv) fail(call, "scale and scale_inv are the same value");
}

// A float32 [slots, 1] tensor of the slots' scales; its row stride as SlotStrides takes it (0: packed).
int scale_column(const char* call, const Tensor& t, const char* name, std::size_t slots) {
    float_vector(call, t, name, slots);
    if (t.cols != 1) fail(call, std::string(name) + " is [" + std::to_string(t.rows) + ", " + std::to_string(t.cols) +
                                    "]; allowed: [" + std::to_string(slots) + ", 1], one value per slot");
    return static_cast<int>(std::min<std::size_t>(t.row_stride, std::numeric_limits<int>::max()));
}

}  // namespace

std::optional<ScaleUpdateCall> scale_update_call(const char* call, const Tensor& history, const Tensor& scale,
                                                 const Tensor& scale_inv, float numerator, ScalingRule rule,
                                                 const ScaleUpdateRecord& record) {
    if (history.dtype != DType::Float32) {
        fail(call, "history has dtype " + std::string(to_string(history.dtype)) + "; allowed: float32");
    }
    constexpr auto kMostSlots = static_cast<std::size_t>(std::numeric_limits<int>::max());
    if (history.rows > kMostSlots || history.cols > kMostSlots) {
        fail(call, "history is [" + std::to_string(history.rows) + ", " + std::to_string(history.cols) + "]; allowed: each at most " +
                       std::to_string(kMostSlots));
    }
    const std::size_t slots = history.rows;
    const int scale_stride = scale_column(call, scale, "scale", slots);
    if (scale_column(call, scale_inv, "scale_inv", slots) != scale_stride) {
        fail(call, "scale_inv's row stride is " + std::to_string(scale_inv.row_stride) + "; allowed: scale's, " +
                       std::to_string(scale.row_stride));
    }
    RecordPointers pointers;
    if (record.statistics.data != nullptr) {
        const Tensor& st = record.statistics;
        if (st.dtype != DType::Float32 || st.rows != slots || st.cols < 2) {
            fail(call, "statistics is " + std::string(to_string(st.dtype)) + " [" + std::to_string(st.rows) + ", " +
                           std::to_string(st.cols) + "]; allowed: float32 [" + std::to_string(slots) + ", 2 or more]");
        }
        pointers.statistics = static_cast<float*>(st.data);
        pointers.statistics_stride = static_cast<int>(std::min<std::size_t>(st.stride(), std::numeric_limits<int>::max()));
    }
    if (record.kept_scale_inv.data != nullptr) {
        if (scale_column(call, record.kept_scale_inv, "kept_scale_inv", slots) != scale_stride) {
            fail(call, "kept_scale_inv's row stride is " + std::to_string(record.kept_scale_inv.row_stride) +
                           "; allowed: scale's, " + std::to_string(scale.row_stride));
        }
        pointers.kept_scale_inv = static_cast<float*>(record.kept_scale_inv.data);
    }
    ScaleUpdateCall a{static_cast<float*>(history.data),
                      static_cast<float*>(scale.data),
                      static_cast<float*>(scale_inv.data),
                      static_cast<int>(slots),
                      static_cast<int>(history.cols),
                      numerator,
                      rule,
                      pointers,
                      {}};
    const int history_stride = static_cast<int>(std::min<std::size_t>(history.row_stride, std::numeric_limits<int>::max()));
    a.strides = check_recipe_arguments(call, a.history, a.scale, a.scale_inv, a.slots, a.history_len, numerator, rule, pointers,
                                       SlotStrides{history_stride, scale_stride});
    if (a.slots == 0) return std::nullopt;
    return a;
}

CurrentScaleCall current_scale_targets(const char* call, float numerator, const Tensor& scale, const Tensor& scale_inv,
                                      const Tensor& staging) {
    const CurrentScaleCall a{nullptr, numerator, float_vector(call, scale, "scale", 1), float_vector(call, scale_inv, "scale_inv", 1),
                             staging.data != nullptr ? float_vector(call, staging, "staging", 1) : nullptr};
    check_current_scale_arguments(call, numerator, a.scale, a.scale_inv, a.staging);
    return a;
}

CurrentScaleCall current_scale_call(const char* call, const Tensor& amax, float numerator, const Tensor& scale,
                                    const Tensor& scale_inv, const Tensor& staging) {
    const float* source = float_vector(call, amax, "amax", 1);
    check_buffer(call, source, "amax", alignof(float));
    CurrentScaleCall a = current_scale_targets(call, numerator, scale, scale_inv, staging);
    a.amax = source;
    return a;
}

}  // namespace tewb::kernels::detail

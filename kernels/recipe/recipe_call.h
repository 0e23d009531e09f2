#pragma once

// The scale update's and current scaling's checked arguments as the kernels (recipe.cu) and the host twins
// (recipe_host.cpp) work on them, and the rules that make them (recipe_checks.cpp). Each fails with KernelError
// "<call>: <what>".
#include <optional>

#include "tewb_kernels/recipe.h"

namespace tewb::kernels::detail {

// ScaleUpdateRecord's buffers: slot s's statistics row at statistics + s · statistics_stride, its kept scale_inv at
// kept_scale_inv + s · the scale stride (null: not written).
struct RecordPointers {
    float* statistics = nullptr;
    int statistics_stride = 0;
    float* kept_scale_inv = nullptr;
};

// Where each slot's values sit: slot s's history row at history + s · history, its scale, scale_inv and kept
// scale_inv at s · scale (floats).
struct SlotStrides {
    int history = 0;
    int scale = 0;
};

struct ScaleUpdateCall {
    float* history = nullptr;
    float* scale = nullptr;
    float* scale_inv = nullptr;
    int slots = 0;
    int history_len = 0;
    float numerator = 0.0f;
    ScalingRule rule = ScalingRule::DelayedMax;
    RecordPointers record;
    SlotStrides strides;
};

// Nothing when there are no slots (after the checks that do not depend on the data).
std::optional<ScaleUpdateCall> scale_update_call(const char* call, const Tensor& history, const Tensor& scale,
                                                 const Tensor& scale_inv, float numerator, ScalingRule rule,
                                                 const ScaleUpdateRecord& record);

struct CurrentScaleCall {
    const float* amax = nullptr;
    float numerator = 0.0f;
    float* scale = nullptr;
    float* scale_inv = nullptr;
    float* staging = nullptr;
};

CurrentScaleCall current_scale_call(const char* call, const Tensor& amax, float numerator, const Tensor& scale,
                                    const Tensor& scale_inv, const Tensor& staging);

// The same checks without the amax (amax null in the result): what abs_max_current_scale (amax.h) writes through.
CurrentScaleCall current_scale_targets(const char* call, float numerator, const Tensor& scale, const Tensor& scale_inv,
                                      const Tensor& staging);

}  // namespace tewb::kernels::detail

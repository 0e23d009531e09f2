#pragma once

// The scale update (tewb_kernels/recipe.h) called as the recipe suites' cases are written: the slots' buffers with
// their strides; each call builds the tensors update_scaling takes, for either implementation (the same signature).
#include <cstddef>

#include "tewb_kernels/recipe.h"

namespace tewb::test::calls {

using UpdateScaling = void (*)(const kernels::Tensor&, const kernels::Tensor&, const kernels::Tensor&, float, kernels::ScalingRule,
                               const kernels::ScaleUpdateRecord&, kernels::Stream);

// Slot s's history row at history + s · history, its scales at s · scale (floats); 0: packed.
struct SlotStrides {
    int history = 0;
    int scale = 0;
};

// The record's buffers: slot s's statistics row at statistics + s · statistics_stride, its kept scale_inv at
// kept_scale_inv + s · the scale stride (null: not written).
struct SlotRecord {
    float* statistics = nullptr;
    int statistics_stride = 0;
    float* kept_scale_inv = nullptr;
};

inline kernels::Tensor slot_rows(float* data, std::size_t rows, std::size_t cols, int stride) {
    kernels::Tensor t = kernels::input(data, kernels::DType::Float32, rows, cols);
    t.row_stride = static_cast<std::size_t>(stride);
    return t;
}

inline void update_scaling(UpdateScaling entry, float* history, float* scale, float* scale_inv, std::size_t slots,
                           std::size_t history_len, float numerator, kernels::ScalingRule rule, const SlotRecord& record = {},
                           const SlotStrides& strides = {}) {
    kernels::ScaleUpdateRecord written;
    if (record.statistics != nullptr) written.statistics = slot_rows(record.statistics, slots, 2, record.statistics_stride);
    if (record.kept_scale_inv != nullptr) written.kept_scale_inv = slot_rows(record.kept_scale_inv, slots, 1, strides.scale);
    entry(slot_rows(history, slots, history_len, strides.history), slot_rows(scale, slots, 1, strides.scale),
          slot_rows(scale_inv, slots, 1, strides.scale), numerator, rule, written, {});
}

}  // namespace tewb::test::calls

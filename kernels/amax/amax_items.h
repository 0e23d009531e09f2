#pragma once

// What the amax kernels (amax.cu) and their host twins (amax_host.cpp) work on once an entry point has checked its
// arguments (amax_checks.cpp): one tensor's elements, where its amax goes and, for current scaling, where the scale
// from it goes. Internal to kernels/amax; no CUDA here.
#include <cstddef>
#include <vector>

#include "tewb_kernels/amax.h"

namespace tewb::kernels::detail {

struct AbsMaxItem {
    const void* data = nullptr;
    std::size_t n = 0;
    DType dtype = DType::Float32;
    float* amax = nullptr;       // null: not written
    float* scale = nullptr;      // null: no scale (abs_max alone)
    float* scale_inv = nullptr;
    float* staging = nullptr;    // null: none
    float numerator = 0.0f;
};

void check_abs_max(const char* call, const Tensor& x);
// x (check_abs_max passed) as an item without a scale.
AbsMaxItem abs_max_item(const Tensor& x);
// One CurrentScaleItem checked (`call` names it in errors) as the kernels take it.
AbsMaxItem checked_current_scale_item(const char* call, const CurrentScaleItem& item);
// `count` of them, in order; each named "<call> (tensor i)" in errors.
std::vector<AbsMaxItem> checked_current_scale_items(const char* call, const CurrentScaleItem* items, std::size_t count);

}  // namespace tewb::kernels::detail

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "amax/amax_items.h"
#include "common/fail.h"
#include "recipe/recipe_call.h"

namespace tewb::kernels::detail {

namespace {

// x as every entry point reads it; x.amax, when set, 4-byte aligned.
void check_source(const std::string& call, const Tensor& x) {
    const std::size_t n = x.numel();
    if (x.amax != nullptr && reinterpret_cast<std::uintptr_t>(x.amax) % alignof(float) != 0) fail(call, "x.amax is not 4-byte aligned");
    if (n > 0 && x.data == nullptr) fail(call, "x is a null pointer but has " + std::to_string(n) + " elements");
    if (x.dtype != DType::Float32 && x.dtype != DType::BFloat16 && x.dtype != DType::Float16) {
        fail(call, "x has dtype " + std::string(to_string(x.dtype)) + "; allowed: float32, bfloat16, float16");
    }
    if (n > 0 && reinterpret_cast<std::uintptr_t>(x.data) % element_size(x.dtype) != 0) {
        fail(call, "x is not aligned to its element size of " + std::to_string(element_size(x.dtype)) + " bytes (" +
                       std::string(to_string(x.dtype)) + ")");
    }
}

}  // namespace

void check_abs_max(const char* call, const Tensor& x) {
    if (x.amax == nullptr) fail(call, "x.amax is a null pointer");
    check_source(call, x);
}

AbsMaxItem abs_max_item(const Tensor& x) {
    AbsMaxItem item;
    item.data = x.data;
    item.n = x.numel();
    item.dtype = x.dtype;
    item.amax = x.amax;
    return item;
}

AbsMaxItem checked_current_scale_item(const char* call, const CurrentScaleItem& item) {
    check_source(call, item.x);
    const CurrentScaleCall a = current_scale_targets(call, item.numerator, item.scale, item.scale_inv, item.staging);
    if (item.x.amax != nullptr && (item.x.amax == a.scale || item.x.amax == a.scale_inv)) {
        fail(call, "x.amax is also the scale or scale_inv it sets; allowed: a float of its own (or null)");
    }
    AbsMaxItem checked = abs_max_item(item.x);
    checked.scale = a.scale;
    checked.scale_inv = a.scale_inv;
    checked.staging = a.staging;
    checked.numerator = a.numerator;
    return checked;
}

std::vector<AbsMaxItem> checked_current_scale_items(const char* call, const CurrentScaleItem* items, std::size_t count) {
    if (count > 0 && items == nullptr) fail(call, "items is null with count " + std::to_string(count));
    std::vector<AbsMaxItem> work;
    work.reserve(count);
    // Every float a tensor's last block writes, with the tensor that writes it: two tensors writing one would race.
    std::vector<std::pair<const float*, std::size_t>> written;
    for (std::size_t i = 0; i < count; ++i) {
        const std::string item_call = std::string(call) + " (tensor " + std::to_string(i) + ")";
        work.push_back(checked_current_scale_item(item_call.c_str(), items[i]));
        for (const float* p : {work.back().amax, work.back().scale, work.back().scale_inv, work.back().staging}) {
            if (p != nullptr) written.emplace_back(p, i);
        }
    }
    std::sort(written.begin(), written.end());
    for (std::size_t k = 1; k < written.size(); ++k) {
        if (written[k].first == written[k - 1].first && written[k].second != written[k - 1].second) {
            fail(call, "tensors " + std::to_string(written[k - 1].second) + " and " + std::to_string(written[k].second) +
                           " write the same float (their amax, scale, scale_inv or staging); allowed: each its own");
        }
    }
    return work;
}

}  // namespace tewb::kernels::detail

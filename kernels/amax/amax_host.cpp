#include <algorithm>
#include <cstdint>
#include <cstring>

#include "amax/amax_items.h"
#include "common/fail.h"
#include "common/host_numbers.h"
#include "recipe/recipe_math.h"

namespace tewb::kernels::host {

namespace {

template <DType kType>
std::uint32_t abs_max_bits(const void* x, std::size_t n) {
    std::uint32_t local = 0;
    for (std::size_t i = 0; i < n; ++i) local = std::max(local, detail::abs_bits(detail::load(x, kType, i)));
    return local;
}

// The item's amax and, with a scale, current scaling's values from it: what the kernel's last block writes.
void run(const detail::AbsMaxItem& item) {
    std::uint32_t bits = 0;  // the GPU's launch writes 0 when there are no elements
    if (item.n > 0) {
        switch (item.dtype) {
            case DType::BFloat16: bits = abs_max_bits<DType::BFloat16>(item.data, item.n); break;
            case DType::Float16: bits = abs_max_bits<DType::Float16>(item.data, item.n); break;
            default: bits = abs_max_bits<DType::Float32>(item.data, item.n); break;
        }
    }
    if (item.amax != nullptr) std::memcpy(item.amax, &bits, sizeof bits);
    if (item.scale != nullptr) {
        float amax = 0.0f;
        std::memcpy(&amax, &bits, sizeof amax);
        detail::current_scale_values(amax, item.numerator, item.scale, item.scale_inv, item.staging);
    }
}

}  // namespace

void abs_max(const Tensor& x, Stream) {
    detail::check_abs_max("tewb::kernels::host::abs_max", x);
    detail::note_launch();
    run(detail::abs_max_item(x));
}

void abs_max_current_scale(const Tensor& x, float numerator, const Tensor& scale, const Tensor& scale_inv, const Tensor& staging,
                           Stream) {
    const CurrentScaleItem item{x, numerator, scale, scale_inv, staging};
    const detail::AbsMaxItem checked = detail::checked_current_scale_item("tewb::kernels::host::abs_max_current_scale", item);
    detail::note_launch();
    run(checked);
}

void abs_max_current_scale_multi(const CurrentScaleItem* items, std::size_t count, Stream) {
    const std::vector<detail::AbsMaxItem> work =
        detail::checked_current_scale_items("tewb::kernels::host::abs_max_current_scale_multi", items, count);
    for (std::size_t i = 0; i < work.size(); ++i) {
        if (i % kAbsMaxItemsPerLaunch == 0) detail::note_launch();
        run(work[i]);
    }
}

}  // namespace tewb::kernels::host

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/arguments.h"
#include "common/fail.h"
#include "common/host_loops.h"
#include "common/host_numbers.h"
#include "optimizer/adamw_call.h"
#include "optimizer/adamw_math.h"
#include "tewb_kernels/adamw.h"

namespace tewb::kernels::host {

namespace {

using detail::AdamWTensor;

void update_tensor(const AdamWTensor& t, const detail::AdamWCoefficients& c) {
    auto* copy = static_cast<std::uint16_t*>(t.param_bf16);
    // Elements are independent: how they are split over threads does not change a bit.
    detail::parallel_for(t.numel, 4, [&](std::size_t first, std::size_t last) {
        for (std::size_t i = first; i < last; ++i) {
            detail::adamw_update(c, t.param[i], t.grad[i], t.exp_avg[i], t.exp_avg_sq[i]);
            if (copy != nullptr) copy[i] = detail::float_to_bf16(t.param[i]);
        }
    });
}

// The FP8 copies of the updated parameter, as host::cast_transpose_multi_to_fp8 writes an item's: the same
// product and conversion, its amax as the bits of max |param| (a NaN above inf) combined into what fp8.amax
// holds, then the transposed copy.
void cast_tensor(const AdamWTensor& t) {
    const float scale = *t.fp8.scale;
    auto* out = static_cast<std::uint8_t*>(t.fp8.data);
    std::atomic<std::uint32_t> amax_bits{0};
    detail::parallel_for(t.rows, t.cols, [&](std::size_t first, std::size_t last) {
        std::uint32_t local = 0;
        for (std::size_t i = first * t.cols; i < last * t.cols; ++i) {
            local = std::max(local, detail::abs_bits(t.param[i]));
            out[i] = detail::float_to_fp8(t.param[i] * scale, t.fp8.type);
        }
        detail::combine_bits_max(amax_bits, local);
    });
    if (t.fp8.transposed != nullptr) detail::transpose_bytes(out, t.rows, t.cols, static_cast<std::uint8_t*>(t.fp8.transposed));
    if (t.fp8.amax != nullptr) {
        std::uint32_t held = 0;
        std::memcpy(&held, t.fp8.amax, sizeof held);
        const std::uint32_t bits = amax_bits.load();
        if (bits > held) std::memcpy(t.fp8.amax, &bits, sizeof bits);
    }
}

}  // namespace

void adamw_step(const AdamWParameter* parameters, std::size_t count, const Tensor& step_tensor, double lr, double beta1,
                double beta2, double weight_decay, double eps, Stream) {
    constexpr const char* call = "tewb::kernels::host::adamw_step";
    float* step = detail::float_vector(call, step_tensor, "step", 1);
    const std::vector<AdamWTensor> work =
        detail::checked_adamw_tensors(call, parameters, count, step, lr, beta1, beta2, weight_decay, eps);
    const float t = *step + 1.0f;
    const detail::AdamWCoefficients c = detail::adamw_coefficients(detail::adamw_scalars(lr, beta1, beta2, weight_decay, eps), t);
    for (const AdamWTensor& tensor : work) {
        update_tensor(tensor, c);
        if (tensor.fp8.data != nullptr) cast_tensor(tensor);
    }
    *step = t;
    for (std::size_t launch = 0; launch < adamw_launches(work.size()); ++launch) detail::note_launch();
}

}  // namespace tewb::kernels::host

#include <cstdint>
#include <vector>

#include "common/fail.h"
#include "common/host_loops.h"
#include "common/host_numbers.h"
#include "optimizer/adamw_arguments.h"
#include "optimizer/adamw_math.h"
#include "tewb_kernels/host/adamw.h"

namespace tewb::kernels::host {

namespace {

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

}  // namespace

void adamw_step(const AdamWTensor* tensors, std::size_t count, float* step, double lr, double beta1, double beta2,
                double weight_decay, double eps) {
    const std::vector<AdamWTensor> work =
        detail::checked_adamw_tensors("tewb::kernels::host::adamw_step", tensors, count, step, lr, beta1, beta2, weight_decay, eps);
    const float t = *step + 1.0f;
    const detail::AdamWCoefficients c = detail::adamw_coefficients(detail::adamw_scalars(lr, beta1, beta2, weight_decay, eps), t);
    for (const AdamWTensor& tensor : work) update_tensor(tensor, c);
    *step = t;
    for (std::size_t launch = 0; launch < adamw_launches(work.size()); ++launch) detail::note_launch();
}

}  // namespace tewb::kernels::host

#include <vector>

#include "optimizer/adamw_arguments.h"
#include "optimizer/adamw_launch.h"
#include "tewb_kernels/adamw.h"

namespace tewb::kernels {

void adamw_step(const AdamWTensor* tensors, std::size_t count, float* step, double lr, double beta1, double beta2,
                double weight_decay, double eps, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::adamw_step";
    const std::vector<AdamWTensor> work =
        detail::checked_adamw_tensors(call, tensors, count, step, lr, beta1, beta2, weight_decay, eps);
    detail::launch_adamw(work, step, detail::adamw_scalars(lr, beta1, beta2, weight_decay, eps), stream, call);
}

}  // namespace tewb::kernels

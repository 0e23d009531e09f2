#include "amax/amax_arguments.h"
#include "amax/amax_launch.h"
#include "tewb_kernels/amax.h"

namespace tewb::kernels {

void abs_max(const void* x, DType dtype, std::size_t n, float* amax_out, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::abs_max";
    detail::check_abs_max_arguments(call, x, dtype, n, amax_out);
    detail::launch_abs_max(x, dtype, n, amax_out, stream);
}

}  // namespace tewb::kernels

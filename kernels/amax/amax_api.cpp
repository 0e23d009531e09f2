#include <cstdint>
#include <string>

#include "amax/amax_launch.h"
#include "common/check.h"
#include "tewb_kernels/amax.h"

namespace tewb::kernels {

void abs_max(const void* x, DType dtype, std::size_t n, float* amax_out, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::abs_max";
    if (amax_out == nullptr) {
        detail::fail(call, "amax_out is a null pointer");
    }
    if (reinterpret_cast<std::uintptr_t>(amax_out) % alignof(float) != 0) {
        detail::fail(call, "amax_out is not 4-byte aligned");
    }
    if (n > 0 && x == nullptr) {
        detail::fail(call, "x is a null pointer but n = " + std::to_string(n));
    }
    if (dtype != DType::Float32 && dtype != DType::BFloat16 && dtype != DType::Float16) {
        detail::fail(call, "unsupported dtype (allowed: float32, bfloat16, float16)");
    }
    if (n > 0 && reinterpret_cast<std::uintptr_t>(x) % element_size(dtype) != 0) {
        detail::fail(call, "x is not aligned to its element size of " + std::to_string(element_size(dtype)) + " bytes (" +
                               std::string(to_string(dtype)) + ")");
    }
    detail::launch_abs_max(x, dtype, n, amax_out, stream);
}

}  // namespace tewb::kernels

#include "amax/amax_arguments.h"

#include <cstdint>
#include <string>

#include "common/fail.h"

namespace tewb::kernels::detail {

void check_abs_max_arguments(const char* call, const void* x, DType dtype, std::size_t n, const float* amax_out) {
    if (amax_out == nullptr) fail(call, "amax_out is a null pointer");
    if (reinterpret_cast<std::uintptr_t>(amax_out) % alignof(float) != 0) fail(call, "amax_out is not 4-byte aligned");
    if (n > 0 && x == nullptr) fail(call, "x is a null pointer but n = " + std::to_string(n));
    if (dtype != DType::Float32 && dtype != DType::BFloat16 && dtype != DType::Float16) {
        fail(call, "unsupported dtype (allowed: float32, bfloat16, float16)");
    }
    if (n > 0 && reinterpret_cast<std::uintptr_t>(x) % element_size(dtype) != 0) {
        fail(call, "x is not aligned to its element size of " + std::to_string(element_size(dtype)) + " bytes (" +
                       std::string(to_string(dtype)) + ")");
    }
}

}  // namespace tewb::kernels::detail

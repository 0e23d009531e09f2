#include <cstdint>
#include <string>

#include "common/fail.h"
#include "tewb_kernels/amax.h"

namespace tewb::kernels::detail {

void check_abs_max(const char* call, const Tensor& x) {
    const std::size_t n = x.numel();
    if (x.amax == nullptr) fail(call, "x.amax is a null pointer");
    if (reinterpret_cast<std::uintptr_t>(x.amax) % alignof(float) != 0) fail(call, "x.amax is not 4-byte aligned");
    if (n > 0 && x.data == nullptr) fail(call, "x is a null pointer but has " + std::to_string(n) + " elements");
    if (x.dtype != DType::Float32 && x.dtype != DType::BFloat16 && x.dtype != DType::Float16) {
        fail(call, "x has dtype " + std::string(to_string(x.dtype)) + "; allowed: float32, bfloat16, float16");
    }
    if (n > 0 && reinterpret_cast<std::uintptr_t>(x.data) % element_size(x.dtype) != 0) {
        fail(call, "x is not aligned to its element size of " + std::to_string(element_size(x.dtype)) + " bytes (" +
                       std::string(to_string(x.dtype)) + ")");
    }
}

}  // namespace tewb::kernels::detail

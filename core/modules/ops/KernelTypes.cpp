#include "core/modules/ops/KernelTypes.h"

#include <stdexcept>
#include <string>

namespace tewb {

namespace {

[[noreturn]] void unsupported(const char* what, at::ScalarType type) {
    throw std::invalid_argument(std::string(what) + ": the kernels do not take " + c10::toString(type));
}

}  // namespace

kernels::DType kernel_dtype(at::ScalarType type) {
    switch (type) {
        case at::kFloat: return kernels::DType::Float32;
        case at::kBFloat16: return kernels::DType::BFloat16;
        case at::kHalf: return kernels::DType::Float16;
        case at::kFloat8_e4m3fn: return kernels::DType::Float8E4M3;
        case at::kFloat8_e5m2: return kernels::DType::Float8E5M2;
        case at::kLong: return kernels::DType::Int64;
        default: unsupported("kernel_dtype", type);
    }
}

kernels::DType kernel_dtype(kernels::Fp8Type type) {
    return kernels::fp8_dtype(type);
}

kernels::Tensor kernel_tensor(const at::Tensor& t) {
    if (!t.defined()) return {};
    const bool matrix = t.dim() == 2;
    return kernels::input(t.data_ptr(), kernel_dtype(t.scalar_type()), matrix ? static_cast<std::size_t>(t.size(0)) : 1,
                          static_cast<std::size_t>(matrix ? t.size(1) : t.numel()));
}

kernels::Workspace workspace_ref(const at::Tensor& bytes) {
    return {bytes.data_ptr(), static_cast<std::size_t>(bytes.numel())};
}

}  // namespace tewb

#include <cstdint>
#include <limits>
#include <string>

#include "cast/cast_launch.h"
#include "common/check.h"
#include "tewb_kernels/cast.h"

namespace tewb::kernels {

namespace {

bool aligned(const void* p, std::size_t bytes) {
    return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

void check_input(const char* call, const void* x, DType dtype) {
    if (x == nullptr) detail::fail(call, "x is a null pointer");
    if (dtype != DType::Float32 && dtype != DType::BFloat16 && dtype != DType::Float16) {
        detail::fail(call, "unsupported input dtype (allowed: float32, bfloat16, float16)");
    }
    if (!aligned(x, element_size(dtype))) {
        detail::fail(call, "x is not aligned to its element size of " + std::to_string(element_size(dtype)) + " bytes (" +
                               std::string(to_string(dtype)) + ")");
    }
}

void check_fp8_outputs(const char* call, const float* scale, Fp8Type type, const float* amax) {
    if (type != Fp8Type::E4M3 && type != Fp8Type::E5M2) detail::fail(call, "unsupported FP8 type (allowed: E4M3, E5M2)");
    if (scale == nullptr) detail::fail(call, "scale is a null pointer");
    if (!aligned(scale, alignof(float))) detail::fail(call, "scale is not 4-byte aligned");
    if (amax != nullptr && !aligned(amax, alignof(float))) detail::fail(call, "amax is not 4-byte aligned");
}

void check_matrix(const char* call, std::size_t rows, std::size_t cols) {
    constexpr std::size_t kMaxDim = static_cast<std::size_t>(std::numeric_limits<int>::max());
    if (rows > kMaxDim || cols > kMaxDim) {
        detail::fail(call, "rows = " + std::to_string(rows) + ", cols = " + std::to_string(cols) + "; allowed: each at most " +
                               std::to_string(kMaxDim));
    }
}

}  // namespace

void cast_to_fp8(const void* x, DType dtype, std::size_t n, const float* scale, void* out, Fp8Type out_type, float* amax,
                 cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::cast_to_fp8";
    check_fp8_outputs(call, scale, out_type, amax);
    if (n == 0) return;
    check_input(call, x, dtype);
    if (out == nullptr) detail::fail(call, "out is a null pointer");
    detail::launch_cast(x, dtype, n, scale, out, out_type, amax, stream);
}

void cast_transpose_to_fp8(const void* x, DType dtype, std::size_t rows, std::size_t cols, const float* scale, void* out,
                           void* out_t, Fp8Type out_type, float* amax, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::cast_transpose_to_fp8";
    check_fp8_outputs(call, scale, out_type, amax);
    check_matrix(call, rows, cols);
    if (rows == 0 || cols == 0) return;
    check_input(call, x, dtype);
    if (out == nullptr) detail::fail(call, "out is a null pointer");
    if (out_t == nullptr) detail::fail(call, "out_t is a null pointer");
    if (out == out_t) detail::fail(call, "out and out_t are the same buffer");
    detail::launch_cast_transpose(x, dtype, rows, cols, scale, out, out_t, out_type, amax, stream);
}

void transpose(const void* x, std::size_t element_bytes, std::size_t rows, std::size_t cols, void* out,
               cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::transpose";
    if (element_bytes != 1 && element_bytes != 2 && element_bytes != 4) {
        detail::fail(call, "element_bytes = " + std::to_string(element_bytes) + "; allowed: 1, 2 or 4");
    }
    check_matrix(call, rows, cols);
    if (rows == 0 || cols == 0) return;
    if (x == nullptr) detail::fail(call, "x is a null pointer");
    if (out == nullptr) detail::fail(call, "out is a null pointer");
    if (x == out) detail::fail(call, "x and out are the same buffer (the transpose is not in place)");
    if (!aligned(x, element_bytes) || !aligned(out, element_bytes)) {
        detail::fail(call, "x or out is not aligned to the element size of " + std::to_string(element_bytes) + " bytes");
    }
    detail::launch_transpose(x, element_bytes, rows, cols, out, stream);
}

}  // namespace tewb::kernels

#include "common/arguments.h"

#include <cstdint>
#include <limits>
#include <string>

#include "common/fail.h"

namespace tewb::kernels::detail {

void check_buffer(std::string_view call, const void* pointer, std::string_view name, std::size_t alignment) {
    if (pointer == nullptr) fail(call, std::string(name) + " is a null pointer");
    if (reinterpret_cast<std::uintptr_t>(pointer) % alignment != 0) {
        fail(call, std::string(name) + " is not " + std::to_string(alignment) + "-byte aligned");
    }
}

void check_float_or_bf16(std::string_view call, DType dtype, std::string_view name) {
    if (dtype != DType::Float32 && dtype != DType::BFloat16) {
        fail(call, std::string(name) + " has dtype " + std::string(to_string(dtype)) + "; allowed: float32, bfloat16");
    }
}

void check_dims(std::string_view call, std::size_t rows, std::size_t cols) {
    constexpr auto kMax = static_cast<std::size_t>(std::numeric_limits<int>::max());
    if (rows > kMax || cols > kMax) {
        fail(call, "rows = " + std::to_string(rows) + ", cols = " + std::to_string(cols) + "; allowed: each at most " +
                       std::to_string(kMax));
    }
}

std::string shape_text(std::size_t rows, std::size_t cols) {
    std::string text = "[";
    text.append(std::to_string(rows)).append(", ").append(std::to_string(cols)).append("]");
    return text;
}

std::string shape_text(const Tensor& t) {
    return shape_text(t.rows, t.cols);
}

void check_shape(std::string_view call, const Tensor& tensor, std::string_view name, std::size_t rows, std::size_t cols) {
    if (tensor.rows != rows || tensor.cols != cols) {
        fail(call, std::string(name) + " is " + shape_text(tensor) + "; allowed: " + shape_text(rows, cols));
    }
}

void check_same_dtype(std::string_view call, DType dtype, std::string_view name, DType like, std::string_view like_name) {
    if (dtype != like) {
        fail(call, std::string(name) + " has dtype " + std::string(to_string(dtype)) +
                       "; allowed: " + std::string(to_string(like)) + ", " + std::string(like_name) + "'s");
    }
}

void check_workspace(std::string_view call, const void* workspace, std::size_t workspace_bytes, std::size_t needed,
                     std::string_view size_function) {
    if (workspace_bytes < needed) {
        fail(call, "workspace of " + std::to_string(workspace_bytes) + " bytes; needed: " + std::to_string(needed) + " (" +
                       std::string(size_function) + ")");
    }
    check_buffer(call, workspace, "workspace", alignof(float));
}

void check_fp8_output(std::string_view call, const Fp8Output& fp8) {
    if (fp8.type != Fp8Type::E4M3 && fp8.type != Fp8Type::E5M2) fail(call, "unsupported FP8 type (allowed: E4M3, E5M2)");
    check_buffer(call, fp8.data, "fp8.data", 1);
    check_buffer(call, fp8.scale, "fp8.scale", alignof(float));
    if (fp8.transposed != nullptr && fp8.transposed == fp8.data) fail(call, "fp8.transposed and fp8.data are the same buffer");
    if (fp8.amax != nullptr) check_buffer(call, fp8.amax, "fp8.amax", alignof(float));
}

TokensRef token_rows(std::string_view call, const Tensor& tokens, std::string_view name) {
    if (tokens.dtype != DType::Int64) {
        fail(call, std::string(name) + " has dtype " + std::string(to_string(tokens.dtype)) + "; allowed: int64");
    }
    return {static_cast<const std::int64_t*>(tokens.data), tokens.rows, tokens.cols, tokens.stride()};
}

Fp8Type fp8_type(const Tensor& t) {
    return fp8_type_of(t.dtype).value_or(Fp8Type::E4M3);
}

Fp8Output fp8_output(std::string_view call, const Tensor& t, std::string_view name, std::size_t rows, std::size_t cols) {
    if (t.data == nullptr) return {};
    if (!is_fp8(t.dtype)) {
        fail(call, std::string(name) + " has dtype " + std::string(to_string(t.dtype)) + "; allowed: E4M3, E5M2");
    }
    check_shape(call, t, name, rows, cols);
    return {t.data, t.transposed, t.scale, t.amax, fp8_type(t)};
}

float* float_vector(std::string_view call, const Tensor& t, std::string_view name, std::size_t n) {
    if (t.dtype != DType::Float32) {
        fail(call, std::string(name) + " has dtype " + std::string(to_string(t.dtype)) + "; allowed: float32");
    }
    if (t.numel() != n) {
        fail(call, std::string(name) + " has " + std::to_string(t.numel()) + " elements; allowed: " + std::to_string(n));
    }
    return static_cast<float*>(t.data);
}

bool overlap(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
    const auto a0 = reinterpret_cast<std::uintptr_t>(a);
    const auto b0 = reinterpret_cast<std::uintptr_t>(b);
    return a != nullptr && b != nullptr && a0 < b0 + b_bytes && b0 < a0 + a_bytes;
}

std::size_t tensor_bytes(const Tensor& t) {
    if (t.rows == 0 || t.cols == 0) return 0;
    return ((t.rows - 1) * t.stride() + t.cols) * element_size(t.dtype);
}

}  // namespace tewb::kernels::detail

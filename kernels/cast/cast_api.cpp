#include <string>

#include "cast/cast_launch.h"
#include "common/arguments.h"
#include "common/check.h"
#include "tewb_kernels/cast.h"

namespace tewb::kernels {

namespace {

void check_input(const char* call, const void* x, DType dtype) {
    if (dtype != DType::Float32 && dtype != DType::BFloat16 && dtype != DType::Float16) {
        detail::fail(call, "unsupported input dtype (allowed: float32, bfloat16, float16)");
    }
    detail::check_buffer(call, x, "x", element_size(dtype));
}

void check_fp8_outputs(const char* call, const float* scale, Fp8Type type, const float* amax) {
    if (type != Fp8Type::E4M3 && type != Fp8Type::E5M2) detail::fail(call, "unsupported FP8 type (allowed: E4M3, E5M2)");
    detail::check_buffer(call, scale, "scale", alignof(float));
    if (amax != nullptr) detail::check_buffer(call, amax, "amax", alignof(float));
}

}  // namespace

void cast_to_fp8(const void* x, DType dtype, std::size_t n, const float* scale, void* out, Fp8Type out_type, float* amax,
                 cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::cast_to_fp8";
    check_fp8_outputs(call, scale, out_type, amax);
    if (n == 0) return;
    check_input(call, x, dtype);
    detail::check_buffer(call, out, "out", 1);
    detail::launch_cast(x, dtype, n, scale, out, out_type, amax, stream);
}

void cast_transpose_to_fp8(const void* x, DType dtype, std::size_t rows, std::size_t cols, const float* scale, void* out,
                           void* out_t, Fp8Type out_type, float* amax, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::cast_transpose_to_fp8";
    check_fp8_outputs(call, scale, out_type, amax);
    detail::check_dims(call, rows, cols);
    if (rows == 0 || cols == 0) return;
    check_input(call, x, dtype);
    detail::check_buffer(call, out, "out", 1);
    detail::check_buffer(call, out_t, "out_t", 1);
    if (out == out_t) detail::fail(call, "out and out_t are the same buffer");
    detail::launch_cast_transpose(x, dtype, rows, cols, scale, out, out_t, out_type, amax, stream);
}

std::size_t cast_transpose_dbias_workspace_bytes(std::size_t rows, std::size_t cols) {
    return static_cast<std::size_t>(detail::cast_transpose_dbias_chunks(rows)) * cols * sizeof(float);
}

void cast_transpose_dbias_to_fp8(const void* x, DType dtype, std::size_t rows, std::size_t cols, const float* scale, void* out,
                                 void* out_t, Fp8Type out_type, float* amax, void* dbias, DType dbias_dtype, void* workspace,
                                 std::size_t workspace_bytes, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::cast_transpose_dbias_to_fp8";
    check_fp8_outputs(call, scale, out_type, amax);
    detail::check_dims(call, rows, cols);
    detail::check_float_or_bf16(call, dbias_dtype, "dbias");
    if (rows == 0 || cols == 0) return;
    check_input(call, x, dtype);
    detail::check_buffer(call, out, "out", 1);
    detail::check_buffer(call, out_t, "out_t", 1);
    if (out == out_t) detail::fail(call, "out and out_t are the same buffer");
    detail::check_buffer(call, dbias, "dbias", element_size(dbias_dtype));
    detail::check_workspace(call, workspace, workspace_bytes, cast_transpose_dbias_workspace_bytes(rows, cols),
                            "cast_transpose_dbias_workspace_bytes");
    detail::launch_cast_transpose_dbias(x, dtype, rows, cols, scale, out, out_t, out_type, amax, dbias, dbias_dtype, workspace,
                                        stream);
}

void block_cast_to_fp8(const void* x, DType dtype, std::size_t rows, std::size_t cols, int block_rows, bool power_of_two,
                       void* out, float* scale_inv, Fp8Type out_type, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::block_cast_to_fp8";
    if (block_rows != 1 && block_rows != 128) {
        detail::fail(call, "block_rows = " + std::to_string(block_rows) + "; allowed: 1 (1x128 blocks) or 128 (128x128)");
    }
    if (out_type != Fp8Type::E4M3 && out_type != Fp8Type::E5M2) detail::fail(call, "unsupported FP8 type");
    detail::check_dims(call, rows, cols);
    if (rows == 0 || cols == 0) return;
    check_input(call, x, dtype);
    detail::check_buffer(call, out, "out", 1);
    detail::check_buffer(call, scale_inv, "scale_inv", 4);
    detail::launch_block_cast(x, dtype, rows, cols, block_rows, power_of_two, out, scale_inv, out_type, stream);
}

void transpose(const void* x, std::size_t element_bytes, std::size_t rows, std::size_t cols, void* out,
               cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::transpose";
    if (element_bytes != 1 && element_bytes != 2 && element_bytes != 4) {
        detail::fail(call, "element_bytes = " + std::to_string(element_bytes) + "; allowed: 1, 2 or 4");
    }
    detail::check_dims(call, rows, cols);
    if (rows == 0 || cols == 0) return;
    detail::check_buffer(call, x, "x", element_bytes);
    detail::check_buffer(call, out, "out", element_bytes);
    if (x == out) detail::fail(call, "x and out are the same buffer (the transpose is not in place)");
    detail::launch_transpose(x, element_bytes, rows, cols, out, stream);
}

}  // namespace tewb::kernels

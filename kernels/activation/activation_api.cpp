#include <string>

#include "activation/activation_launch.h"
#include "common/arguments.h"
#include "common/check.h"
#include "tewb_kernels/activation.h"

namespace tewb::kernels {

void gelu_forward(const void* x, DType x_dtype, std::size_t rows, std::size_t cols, void* out, DType out_dtype,
                  const Fp8Output* fp8, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::gelu_forward";
    detail::check_dims(call, rows, cols);
    if (out == nullptr && fp8 == nullptr) detail::fail(call, "no output: out and fp8 are both null");
    detail::check_float_or_bf16(call, x_dtype, "x");
    if (out != nullptr) detail::check_float_or_bf16(call, out_dtype, "out");
    if (rows == 0 || cols == 0) return;
    detail::check_buffer(call, x, "x", element_size(x_dtype));
    if (out != nullptr) detail::check_buffer(call, out, "out", element_size(out_dtype));
    if (fp8 != nullptr) detail::check_fp8_output(call, *fp8);
    detail::launch_gelu_forward(x, x_dtype, rows, cols, out, out_dtype, fp8, stream);
}

std::size_t gelu_backward_workspace_bytes(std::size_t rows, std::size_t cols) {
    return static_cast<std::size_t>(detail::gelu_backward_chunks(rows)) * cols * sizeof(float);
}

void gelu_backward(const void* dy, const void* x, DType dtype, std::size_t rows, std::size_t cols, void* dx,
                   const Fp8Output* fp8, void* dbias, DType dbias_dtype, void* workspace, std::size_t workspace_bytes,
                   cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::gelu_backward";
    detail::check_dims(call, rows, cols);
    if (dx == nullptr && fp8 == nullptr && dbias == nullptr) detail::fail(call, "no output: dx, fp8 and dbias are all null");
    detail::check_float_or_bf16(call, dtype, "dy and x");
    if (dbias != nullptr) detail::check_float_or_bf16(call, dbias_dtype, "dbias");
    if (rows == 0 || cols == 0) return;
    detail::check_buffer(call, dy, "dy", element_size(dtype));
    detail::check_buffer(call, x, "x", element_size(dtype));
    if (dx != nullptr) detail::check_buffer(call, dx, "dx", element_size(dtype));
    if (fp8 != nullptr) detail::check_fp8_output(call, *fp8);
    if (dbias != nullptr) {
        detail::check_buffer(call, dbias, "dbias", element_size(dbias_dtype));
        detail::check_workspace(call, workspace, workspace_bytes, gelu_backward_workspace_bytes(rows, cols),
                                "gelu_backward_workspace_bytes");
    }
    detail::launch_gelu_backward(dy, x, dtype, rows, cols, dx, fp8, dbias, dbias_dtype, workspace, stream);
}

}  // namespace tewb::kernels

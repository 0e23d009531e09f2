#include "activation/activation_arguments.h"

#include "common/arguments.h"
#include "common/fail.h"

namespace tewb::kernels::detail {

bool check_gelu_forward_arguments(const char* call, const void* x, DType x_dtype, std::size_t rows, std::size_t cols,
                                  const void* out, DType out_dtype, const Fp8Output* fp8) {
    check_dims(call, rows, cols);
    if (out == nullptr && fp8 == nullptr) fail(call, "no output: out and fp8 are both null");
    check_float_or_bf16(call, x_dtype, "x");
    if (out != nullptr) check_float_or_bf16(call, out_dtype, "out");
    if (rows == 0 || cols == 0) return false;
    check_buffer(call, x, "x", element_size(x_dtype));
    if (out != nullptr) check_buffer(call, out, "out", element_size(out_dtype));
    if (fp8 != nullptr) check_fp8_output(call, *fp8);
    return true;
}

bool check_gelu_backward_arguments(const char* call, const GeluBackwardCall& a, std::size_t needed_workspace) {
    const std::size_t rows = a.x.rows;
    const std::size_t cols = a.x.cols;
    const DType dtype = a.x.dtype;
    check_dims(call, rows, cols);
    if (a.dx.data == nullptr && a.fp8 == nullptr && a.dbias.data == nullptr)
        fail(call, "no output: dx, fp8 and dbias are all null");
    check_float_or_bf16(call, dtype, "dy and x");
    check_same_dtype(call, a.dy.dtype, "dy", dtype, "x");
    check_shape(call, a.dy, "dy", rows, cols);
    if (a.dx.data != nullptr) {
        check_same_dtype(call, a.dx.dtype, "dx", dtype, "x");
        check_shape(call, a.dx, "dx", rows, cols);
    }
    if (a.dbias.data != nullptr) {
        check_float_or_bf16(call, a.dbias.dtype, "dbias");
        check_shape(call, a.dbias, "dbias", 1, cols);
    }
    if (rows == 0 || cols == 0) return false;
    check_buffer(call, a.dy.data, "dy", element_size(dtype));
    check_buffer(call, a.x.data, "x", element_size(dtype));
    if (a.dx.data != nullptr) check_buffer(call, a.dx.data, "dx", element_size(dtype));
    if (a.fp8 != nullptr) check_fp8_output(call, *a.fp8);
    if (a.dbias.data != nullptr) {
        check_buffer(call, a.dbias.data, "dbias", element_size(a.dbias.dtype));
        check_workspace(call, a.workspace.data, a.workspace.bytes, needed_workspace, "gelu_backward_workspace_bytes");
    }
    return true;
}

}  // namespace tewb::kernels::detail

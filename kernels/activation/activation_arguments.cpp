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

bool check_gelu_backward_arguments(const char* call, const void* dy, const void* x, DType dtype, std::size_t rows,
                                   std::size_t cols, const void* dx, const Fp8Output* fp8, const void* dbias, DType dbias_dtype,
                                   const void* workspace, std::size_t workspace_bytes, std::size_t needed_workspace) {
    check_dims(call, rows, cols);
    if (dx == nullptr && fp8 == nullptr && dbias == nullptr) fail(call, "no output: dx, fp8 and dbias are all null");
    check_float_or_bf16(call, dtype, "dy and x");
    if (dbias != nullptr) check_float_or_bf16(call, dbias_dtype, "dbias");
    if (rows == 0 || cols == 0) return false;
    check_buffer(call, dy, "dy", element_size(dtype));
    check_buffer(call, x, "x", element_size(dtype));
    if (dx != nullptr) check_buffer(call, dx, "dx", element_size(dtype));
    if (fp8 != nullptr) check_fp8_output(call, *fp8);
    if (dbias != nullptr) {
        check_buffer(call, dbias, "dbias", element_size(dbias_dtype));
        check_workspace(call, workspace, workspace_bytes, needed_workspace, "gelu_backward_workspace_bytes");
    }
    return true;
}

}  // namespace tewb::kernels::detail

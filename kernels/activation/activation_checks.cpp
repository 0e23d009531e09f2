#include "activation/activation_call.h"
#include "amax/current_scale_target.h"
#include "common/arguments.h"
#include "common/fail.h"
#include "tewb_kernels/activation.h"

namespace tewb::kernels::detail {

std::optional<GeluForwardCall> gelu_forward_call(const char* call, const Tensor& x, const Tensor& out, const Tensor& fp8) {
    const std::size_t rows = x.rows;
    const std::size_t cols = x.cols;
    check_dims(call, rows, cols);
    const GeluForwardCall a{x, out, fp8_output(call, fp8, "fp8", rows, cols)};
    if (out.data == nullptr && a.fp8.data == nullptr) fail(call, "no output: out and fp8 are both null");
    check_float_or_bf16(call, x.dtype, "x");
    if (out.data != nullptr) {
        check_float_or_bf16(call, out.dtype, "out");
        check_shape(call, out, "out", rows, cols);
    }
    if (rows == 0 || cols == 0) return std::nullopt;
    check_buffer(call, x.data, "x", element_size(x.dtype));
    if (out.data != nullptr) check_buffer(call, out.data, "out", element_size(out.dtype));
    if (a.fp8.data != nullptr) check_fp8_output(call, a.fp8);
    return a;
}

namespace {

bool check_gelu_backward_arguments(const char* call, const GeluBackwardCall& a, std::size_t needed_workspace) {
    const std::size_t rows = a.x.rows;
    const std::size_t cols = a.x.cols;
    const DType dtype = a.x.dtype;
    check_dims(call, rows, cols);
    if (a.dx.data == nullptr && a.fp8.data == nullptr && a.dbias.data == nullptr)
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
    if (a.fp8.data != nullptr) check_fp8_output(call, a.fp8);
    if (a.dbias.data != nullptr) {
        check_buffer(call, a.dbias.data, "dbias", element_size(a.dbias.dtype));
        check_workspace(call, a.workspace.data, a.workspace.bytes, needed_workspace, "gelu_backward_workspace_bytes");
    }
    return true;
}

}  // namespace

std::optional<GeluBackwardCall> gelu_backward_call(const char* call, const Tensor& dy, const Tensor& x, const Tensor& dx,
                                                   const Tensor& fp8, const Tensor& dbias, const Workspace& workspace) {
    const GeluBackwardCall a{dy, x, dx, fp8_output(call, fp8, "fp8", x.rows, x.cols), dbias, workspace};
    if (!check_gelu_backward_arguments(call, a, gelu_backward_workspace_bytes(x.rows, x.cols))) return std::nullopt;
    return a;
}

std::optional<GeluForwardCall> gelu_forward_current_scale_call(const char* call, const Tensor& x, const Tensor& out,
                                                               const CurrentScaleTarget& target) {
    const CurrentScaleCall t = checked_current_scale_target(call, target, out, "out", {{x, "x"}});
    std::optional<GeluForwardCall> a = gelu_forward_call(call, x, out, Tensor{});
    if (a) a->fresh = t;
    return a;
}

std::optional<GeluBackwardCall> gelu_backward_current_scale_call(const char* call, const Tensor& dy, const Tensor& x,
                                                                 const Tensor& dx, const CurrentScaleTarget& target,
                                                                 const Tensor& dbias, const Workspace& workspace) {
    const CurrentScaleCall t =
        checked_current_scale_target(call, target, dx, "dx", {{dy, "dy"}, {x, "x"}, {dbias, "dbias"}}, workspace);
    std::optional<GeluBackwardCall> a = gelu_backward_call(call, dy, x, dx, Tensor{}, dbias, workspace);
    if (a) a->fresh = t;
    return a;
}

}  // namespace tewb::kernels::detail

namespace tewb::kernels {

std::size_t gelu_backward_workspace_bytes(std::size_t rows, std::size_t cols) {
    return detail::gelu_backward_chunks(rows) * cols * sizeof(float);
}

}  // namespace tewb::kernels

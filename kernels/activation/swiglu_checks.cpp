#include <string>

#include "activation/activation_call.h"
#include "amax/current_scale_target.h"
#include "common/arguments.h"
#include "common/fail.h"

namespace tewb::kernels::detail {

namespace {

// in is [rows, 2 * cols]: its two halves side by side.
void check_halves(const char* call, const Tensor& in) {
    check_dims(call, in.rows, in.cols);
    if (in.cols % 2 != 0) {
        fail(call, "in is [" + std::to_string(in.rows) + ", " + std::to_string(in.cols) +
                       "]: an odd width; allowed: [rows, 2 * cols], the gate's cols columns then the up projection's");
    }
    check_float_or_bf16(call, in.dtype, "in");
}

}  // namespace

std::optional<SwigluForwardCall> swiglu_forward_call(const char* call, const Tensor& in, const Tensor& out, const Tensor& fp8) {
    check_halves(call, in);
    const std::size_t rows = in.rows;
    const std::size_t cols = in.cols / 2;
    const SwigluForwardCall a{in, out, fp8_output(call, fp8, "fp8", rows, cols)};
    if (out.data == nullptr && a.fp8.data == nullptr) fail(call, "no output: out and fp8 are both null");
    if (out.data != nullptr) {
        check_float_or_bf16(call, out.dtype, "out");
        check_shape(call, out, "out", rows, cols);
    }
    if (rows == 0 || cols == 0) return std::nullopt;
    check_buffer(call, in.data, "in", element_size(in.dtype));
    if (out.data != nullptr) check_buffer(call, out.data, "out", element_size(out.dtype));
    if (a.fp8.data != nullptr) check_fp8_output(call, a.fp8);
    return a;
}

std::optional<SwigluBackwardCall> swiglu_backward_call(const char* call, const Tensor& dy, const Tensor& in, const Tensor& din,
                                                       const Tensor& fp8) {
    check_halves(call, in);
    const SwigluBackwardCall a{dy, in, din, fp8_output(call, fp8, "fp8", in.rows, in.cols)};
    if (a.din.data == nullptr && a.fp8.data == nullptr) fail(call, "no output: din and fp8 are both null");
    const std::size_t rows = a.in.rows;
    const std::size_t cols = a.in.cols / 2;
    const DType dtype = a.in.dtype;
    check_same_dtype(call, a.dy.dtype, "dy", dtype, "in");
    check_shape(call, a.dy, "dy", rows, cols);
    if (a.din.data != nullptr) {
        check_same_dtype(call, a.din.dtype, "din", dtype, "in");
        check_shape(call, a.din, "din", rows, 2 * cols);
    }
    if (rows == 0 || cols == 0) return std::nullopt;
    check_buffer(call, a.dy.data, "dy", element_size(dtype));
    check_buffer(call, a.in.data, "in", element_size(dtype));
    if (a.din.data != nullptr) check_buffer(call, a.din.data, "din", element_size(dtype));
    if (a.fp8.data != nullptr) check_fp8_output(call, a.fp8);
    return a;
}

std::optional<SwigluForwardCall> swiglu_forward_current_scale_call(const char* call, const Tensor& in, const Tensor& out,
                                                                   const CurrentScaleTarget& target) {
    const CurrentScaleCall t = checked_current_scale_target(call, target, out, "out", {{in, "in"}});
    std::optional<SwigluForwardCall> a = swiglu_forward_call(call, in, out, Tensor{});
    if (a) a->fresh = t;
    return a;
}

std::optional<SwigluBackwardCall> swiglu_backward_current_scale_call(const char* call, const Tensor& dy, const Tensor& in,
                                                                     const Tensor& din, const CurrentScaleTarget& target) {
    const CurrentScaleCall t = checked_current_scale_target(call, target, din, "din", {{dy, "dy"}, {in, "in"}});
    std::optional<SwigluBackwardCall> a = swiglu_backward_call(call, dy, in, din, Tensor{});
    if (a) a->fresh = t;
    return a;
}

}  // namespace tewb::kernels::detail

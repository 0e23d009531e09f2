#include "normalization/normalization_arguments.h"

#include <cmath>
#include <string>
#include <utility>

#include "common/arguments.h"
#include "common/fail.h"

namespace tewb::kernels::detail {

bool check_layer_norm_forward_arguments(const char* call, const void* x, DType x_dtype, const void* gamma, const void* beta,
                                        DType param_dtype, std::size_t rows, std::size_t hidden, float eps, const void* out,
                                        DType out_dtype, const Fp8Output* fp8, const float* mean, const float* rstd) {
    check_dims(call, rows, hidden);
    if (hidden == 0) fail(call, "hidden = 0; allowed: 1 or more");
    if (!(eps > 0.0f) || !std::isfinite(eps)) fail(call, "eps = " + std::to_string(eps) + "; allowed: a finite value above 0");
    if (out == nullptr && fp8 == nullptr) fail(call, "no output: out and fp8 are both null");
    check_float_or_bf16(call, x_dtype, "x");
    check_float_or_bf16(call, param_dtype, "gamma and beta");
    if (out != nullptr) check_float_or_bf16(call, out_dtype, "out");
    if (rows == 0) return false;
    check_buffer(call, x, "x", element_size(x_dtype));
    check_buffer(call, gamma, "gamma", element_size(param_dtype));
    check_buffer(call, beta, "beta", element_size(param_dtype));
    if (out != nullptr) check_buffer(call, out, "out", element_size(out_dtype));
    if (fp8 != nullptr) check_fp8_output(call, *fp8);
    check_buffer(call, mean, "mean", alignof(float));
    check_buffer(call, rstd, "rstd", alignof(float));
    return true;
}

bool check_layer_norm_backward_arguments(const char* call, const void* dy, DType dy_dtype, const void* x, DType x_dtype,
                                         const float* mean, const float* rstd, const void* gamma, DType param_dtype,
                                         std::size_t rows, std::size_t hidden, const void* dx, const void* dgamma,
                                         const void* dbeta, const void* workspace, std::size_t workspace_bytes,
                                         std::size_t needed_workspace) {
    check_dims(call, rows, hidden);
    if (hidden == 0) fail(call, "hidden = 0; allowed: 1 or more");
    check_float_or_bf16(call, x_dtype, "x and dx");
    check_float_or_bf16(call, dy_dtype, "dy");
    check_float_or_bf16(call, param_dtype, "gamma");
    if (rows == 0) return false;
    check_buffer(call, dy, "dy", element_size(dy_dtype));
    for (const auto& [pointer, name] :
         {std::pair<const void*, const char*>{x, "x"}, std::pair<const void*, const char*>{dx, "dx"}}) {
        check_buffer(call, pointer, name, element_size(x_dtype));
    }
    check_buffer(call, mean, "mean", alignof(float));
    check_buffer(call, rstd, "rstd", alignof(float));
    for (const auto& [pointer, name] :
         {std::pair<const void*, const char*>{gamma, "gamma"}, std::pair<const void*, const char*>{dgamma, "dgamma"},
          std::pair<const void*, const char*>{dbeta, "dbeta"}}) {
        check_buffer(call, pointer, name, element_size(param_dtype));
    }
    check_workspace(call, workspace, workspace_bytes, needed_workspace, "layer_norm_backward_workspace_bytes");
    return true;
}

void check_dresidual(const char* call, const void* dresidual, DType x_dtype) {
    if (dresidual != nullptr) check_buffer(call, dresidual, "dresidual", element_size(x_dtype));
}

}  // namespace tewb::kernels::detail

#include <cmath>
#include <string>

#include "common/arguments.h"
#include "common/check.h"
#include "normalization/normalization_launch.h"
#include "tewb_kernels/normalization.h"

namespace tewb::kernels {

void layer_norm_forward(const void* x, DType x_dtype, const void* gamma, const void* beta, DType param_dtype, std::size_t rows,
                        std::size_t hidden, float eps, void* out, DType out_dtype, const Fp8Output* fp8, float* mean,
                        float* rstd, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::layer_norm_forward";
    detail::check_dims(call, rows, hidden);
    if (hidden == 0) detail::fail(call, "hidden = 0; allowed: 1 or more");
    if (!(eps > 0.0f) || !std::isfinite(eps)) detail::fail(call, "eps = " + std::to_string(eps) + "; allowed: a finite value above 0");
    if (out == nullptr && fp8 == nullptr) detail::fail(call, "no output: out and fp8 are both null");
    detail::check_float_or_bf16(call, x_dtype, "x");
    detail::check_float_or_bf16(call, param_dtype, "gamma and beta");
    if (out != nullptr) detail::check_float_or_bf16(call, out_dtype, "out");
    if (rows == 0) return;
    detail::check_buffer(call, x, "x", element_size(x_dtype));
    detail::check_buffer(call, gamma, "gamma", element_size(param_dtype));
    detail::check_buffer(call, beta, "beta", element_size(param_dtype));
    if (out != nullptr) detail::check_buffer(call, out, "out", element_size(out_dtype));
    if (fp8 != nullptr) detail::check_fp8_output(call, *fp8);
    detail::check_buffer(call, mean, "mean", alignof(float));
    detail::check_buffer(call, rstd, "rstd", alignof(float));
    detail::launch_layer_norm_forward(x, x_dtype, gamma, beta, param_dtype, rows, hidden, eps, out, out_dtype, fp8, mean, rstd,
                                      stream);
}

std::size_t layer_norm_backward_workspace_bytes(std::size_t rows, std::size_t hidden) {
    return 2 * static_cast<std::size_t>(detail::layer_norm_backward_chunks(rows)) * hidden * sizeof(float);
}

void layer_norm_backward(const void* dy, DType dy_dtype, const void* x, DType x_dtype, const float* mean, const float* rstd,
                         const void* gamma,
                         DType param_dtype, std::size_t rows, std::size_t hidden, void* dx, void* dgamma, void* dbeta,
                         void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::layer_norm_backward";
    detail::check_dims(call, rows, hidden);
    if (hidden == 0) detail::fail(call, "hidden = 0; allowed: 1 or more");
    detail::check_float_or_bf16(call, x_dtype, "x and dx");
    detail::check_float_or_bf16(call, dy_dtype, "dy");
    detail::check_float_or_bf16(call, param_dtype, "gamma");
    if (rows == 0) return;
    detail::check_buffer(call, dy, "dy", element_size(dy_dtype));
    for (const auto& [pointer, name] : {std::pair{x, "x"}, std::pair<const void*, const char*>{dx, "dx"}}) {
        detail::check_buffer(call, pointer, name, element_size(x_dtype));
    }
    detail::check_buffer(call, mean, "mean", alignof(float));
    detail::check_buffer(call, rstd, "rstd", alignof(float));
    for (const auto& [pointer, name] :
         {std::pair<const void*, const char*>{gamma, "gamma"}, std::pair<const void*, const char*>{dgamma, "dgamma"},
          std::pair<const void*, const char*>{dbeta, "dbeta"}}) {
        detail::check_buffer(call, pointer, name, element_size(param_dtype));
    }
    detail::check_workspace(call, workspace, workspace_bytes, layer_norm_backward_workspace_bytes(rows, hidden),
                            "layer_norm_backward_workspace_bytes");
    detail::launch_layer_norm_backward(dy, dy_dtype, x, x_dtype, mean, rstd, gamma, param_dtype, rows, hidden, dx, dgamma, dbeta, workspace,
                                       stream);
}

}  // namespace tewb::kernels

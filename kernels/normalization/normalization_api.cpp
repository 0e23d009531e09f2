#include "normalization/normalization_arguments.h"
#include "normalization/normalization_launch.h"
#include "tewb_kernels/normalization.h"

namespace tewb::kernels {

void layer_norm_forward(const void* x, DType x_dtype, const void* gamma, const void* beta, DType param_dtype, std::size_t rows,
                        std::size_t hidden, float eps, void* out, DType out_dtype, const Fp8Output* fp8, float* mean, float* rstd,
                        cudaStream_t stream) {
    if (!detail::check_layer_norm_forward_arguments("tewb::kernels::layer_norm_forward", x, x_dtype, gamma, beta, param_dtype,
                                                    rows, hidden, eps, out, out_dtype, fp8, mean, rstd)) {
        return;
    }
    detail::launch_layer_norm_forward(x, x_dtype, gamma, beta, param_dtype, rows, hidden, eps, out, out_dtype, fp8, mean, rstd,
                                      stream);
}

std::size_t layer_norm_backward_workspace_bytes(std::size_t rows, std::size_t hidden) {
    return 2 * static_cast<std::size_t>(detail::layer_norm_backward_chunks(rows)) * hidden * sizeof(float);
}

void layer_norm_backward(const void* dy, DType dy_dtype, const void* x, DType x_dtype, const float* mean, const float* rstd,
                         const void* gamma, DType param_dtype, std::size_t rows, std::size_t hidden, void* dx, void* dgamma,
                         void* dbeta, void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
    if (!detail::check_layer_norm_backward_arguments("tewb::kernels::layer_norm_backward", dy, dy_dtype, x, x_dtype, mean, rstd,
                                                     gamma, param_dtype, rows, hidden, dx, dgamma, dbeta, workspace,
                                                     workspace_bytes, layer_norm_backward_workspace_bytes(rows, hidden))) {
        return;
    }
    detail::launch_layer_norm_backward(dy, dy_dtype, x, x_dtype, mean, rstd, gamma, param_dtype, rows, hidden, dx, nullptr, dgamma,
                                       dbeta, workspace, stream);
}

void layer_norm_backward_add(const void* dy, DType dy_dtype, const void* x, DType x_dtype, const float* mean, const float* rstd,
                             const void* gamma, DType param_dtype, std::size_t rows, std::size_t hidden, void* dx,
                             const void* dresidual, void* dgamma, void* dbeta, void* workspace, std::size_t workspace_bytes,
                             cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::layer_norm_backward_add";
    if (!detail::check_layer_norm_backward_arguments(call, dy, dy_dtype, x, x_dtype, mean, rstd, gamma, param_dtype, rows, hidden, dx,
                                                     dgamma, dbeta, workspace, workspace_bytes,
                                                     layer_norm_backward_workspace_bytes(rows, hidden))) {
        return;
    }
    detail::check_dresidual(call, dresidual, x_dtype);
    detail::launch_layer_norm_backward(dy, dy_dtype, x, x_dtype, mean, rstd, gamma, param_dtype, rows, hidden, dx, dresidual, dgamma,
                                       dbeta, workspace, stream);
}

}  // namespace tewb::kernels

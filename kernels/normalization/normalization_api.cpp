#include "normalization/normalization_arguments.h"
#include "normalization/normalization_launch.h"
#include "tewb_kernels/normalization.h"

namespace tewb::kernels {

void layer_norm_forward(const ConstTensorRef& x, const ConstTensorRef& gamma, const ConstTensorRef& beta, float eps,
                        const TensorRef& out, const Fp8Output* fp8, float* mean, float* rstd, cudaStream_t stream) {
    const detail::LayerNormForwardCall call{x, gamma, beta, eps, out, fp8, mean, rstd};
    if (!detail::check_layer_norm_forward_arguments("tewb::kernels::layer_norm_forward", call)) return;
    detail::launch_layer_norm_forward(call, stream);
}

std::size_t layer_norm_backward_workspace_bytes(std::size_t rows, std::size_t hidden) {
    return 2 * static_cast<std::size_t>(detail::layer_norm_backward_chunks(rows)) * hidden * sizeof(float);
}

void layer_norm_backward(const ConstTensorRef& dy, const ConstTensorRef& x, const float* mean, const float* rstd,
                         const ConstTensorRef& gamma, const TensorRef& dx, const TensorRef& dgamma, const TensorRef& dbeta,
                         const Workspace& workspace, cudaStream_t stream) {
    const detail::LayerNormBackwardCall call{dy, x, mean, rstd, gamma, dx, {}, dgamma, dbeta, workspace};
    if (!detail::check_layer_norm_backward_arguments("tewb::kernels::layer_norm_backward", call,
                                                     layer_norm_backward_workspace_bytes(x.rows, x.cols))) {
        return;
    }
    detail::launch_layer_norm_backward(call, stream);
}

void layer_norm_backward_add(const ConstTensorRef& dy, const ConstTensorRef& x, const float* mean, const float* rstd,
                             const ConstTensorRef& gamma, const TensorRef& dx, const ConstTensorRef& dresidual,
                             const TensorRef& dgamma, const TensorRef& dbeta, const Workspace& workspace, cudaStream_t stream) {
    constexpr const char* name = "tewb::kernels::layer_norm_backward_add";
    const detail::LayerNormBackwardCall call{dy, x, mean, rstd, gamma, dx, dresidual, dgamma, dbeta, workspace};
    if (!detail::check_layer_norm_backward_arguments(name, call, layer_norm_backward_workspace_bytes(x.rows, x.cols))) return;
    detail::check_dresidual(name, call);
    detail::launch_layer_norm_backward(call, stream);
}

void rms_norm_forward(const ConstTensorRef& x, const ConstTensorRef& gamma, float eps, const TensorRef& out, const Fp8Output* fp8,
                      float* rstd, cudaStream_t stream) {
    const detail::RmsNormForwardCall call{x, gamma, eps, out, fp8, rstd};
    if (!detail::check_rms_norm_forward_arguments("tewb::kernels::rms_norm_forward", call)) return;
    detail::launch_rms_norm_forward(call, stream);
}

std::size_t rms_norm_backward_workspace_bytes(std::size_t rows, std::size_t hidden) {
    return static_cast<std::size_t>(detail::rms_norm_backward_chunks(rows)) * hidden * sizeof(float);
}

void rms_norm_backward(const ConstTensorRef& dy, const ConstTensorRef& x, const float* rstd, const ConstTensorRef& gamma,
                       const TensorRef& dx, const TensorRef& dgamma, const Workspace& workspace, cudaStream_t stream) {
    const detail::RmsNormBackwardCall call{dy, x, rstd, gamma, dx, {}, dgamma, workspace};
    if (!detail::check_rms_norm_backward_arguments("tewb::kernels::rms_norm_backward", call,
                                                   rms_norm_backward_workspace_bytes(x.rows, x.cols))) {
        return;
    }
    detail::launch_rms_norm_backward(call, stream);
}

void rms_norm_backward_add(const ConstTensorRef& dy, const ConstTensorRef& x, const float* rstd, const ConstTensorRef& gamma,
                           const TensorRef& dx, const ConstTensorRef& dresidual, const TensorRef& dgamma,
                           const Workspace& workspace, cudaStream_t stream) {
    const detail::RmsNormBackwardCall call{dy, x, rstd, gamma, dx, dresidual, dgamma, workspace};
    if (!detail::check_rms_norm_backward_arguments("tewb::kernels::rms_norm_backward_add", call,
                                                   rms_norm_backward_workspace_bytes(x.rows, x.cols))) {
        return;
    }
    detail::launch_rms_norm_backward(call, stream);
}

}  // namespace tewb::kernels

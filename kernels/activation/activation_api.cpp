#include "activation/activation_arguments.h"
#include "activation/activation_launch.h"
#include "tewb_kernels/activation.h"

namespace tewb::kernels {

void gelu_forward(const void* x, DType x_dtype, std::size_t rows, std::size_t cols, void* out, DType out_dtype,
                  const Fp8Output* fp8, cudaStream_t stream) {
    if (!detail::check_gelu_forward_arguments("tewb::kernels::gelu_forward", x, x_dtype, rows, cols, out, out_dtype, fp8)) return;
    detail::launch_gelu_forward(x, x_dtype, rows, cols, out, out_dtype, fp8, stream);
}

std::size_t gelu_backward_workspace_bytes(std::size_t rows, std::size_t cols) {
    return static_cast<std::size_t>(detail::gelu_backward_chunks(rows)) * cols * sizeof(float);
}

void gelu_backward(const ConstTensorRef& dy, const ConstTensorRef& x, const TensorRef& dx, const Fp8Output* fp8,
                   const TensorRef& dbias, const Workspace& workspace, cudaStream_t stream) {
    const detail::GeluBackwardCall call{dy, x, dx, fp8, dbias, workspace};
    if (!detail::check_gelu_backward_arguments("tewb::kernels::gelu_backward", call,
                                               gelu_backward_workspace_bytes(x.rows, x.cols))) {
        return;
    }
    detail::launch_gelu_backward(call, stream);
}

}  // namespace tewb::kernels

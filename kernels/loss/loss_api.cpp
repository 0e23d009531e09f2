#include "loss/loss_arguments.h"
#include "loss/loss_launch.h"
#include "loss/loss_rule.h"
#include "tewb_kernels/loss.h"

namespace tewb::kernels {

void cross_entropy_forward(const ConstTensorRef& logits, const TokensRef& targets, float* lse, float* loss,
                           const Workspace& workspace, cudaStream_t stream) {
    detail::check_cross_entropy_forward_arguments("tewb::kernels::cross_entropy_forward", logits, targets, lse, loss, workspace,
                                                  cross_entropy_forward_workspace_bytes(logits.rows, logits.cols));
    detail::launch_cross_entropy_forward(logits, targets, lse, loss, static_cast<double*>(workspace.data), stream);
}

std::size_t cross_entropy_forward_workspace_bytes(std::size_t rows, std::size_t /*vocab*/) {
    return detail::cross_entropy_blocks(rows) * sizeof(double);
}

void cross_entropy_backward(const ConstTensorRef& logits, const TokensRef& targets, const float* lse, const float* grad_loss,
                            const TensorRef& dlogits, cudaStream_t stream) {
    detail::check_cross_entropy_backward_arguments("tewb::kernels::cross_entropy_backward", logits, targets, lse, grad_loss,
                                                   dlogits);
    detail::launch_cross_entropy_backward(logits, targets, lse, grad_loss, dlogits, stream);
}

void cross_entropy_forward_with_grad(const TensorRef& logits, const TokensRef& targets, float* lse, float* loss,
                                     const Workspace& workspace, cudaStream_t stream) {
    detail::check_cross_entropy_forward_with_grad_arguments("tewb::kernels::cross_entropy_forward_with_grad", logits, targets,
                                                            lse, loss, workspace,
                                                            cross_entropy_forward_workspace_bytes(logits.rows, logits.cols));
    detail::launch_cross_entropy_forward_with_grad(logits, targets, lse, loss, static_cast<double*>(workspace.data), stream);
}

}  // namespace tewb::kernels

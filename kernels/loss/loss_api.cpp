#include "loss/loss_arguments.h"
#include "loss/loss_launch.h"
#include "loss/loss_rule.h"
#include "tewb_kernels/loss.h"

namespace tewb::kernels {

void cross_entropy_forward(const void* logits, DType logits_dtype, std::size_t rows, std::size_t vocab,
                           const std::int64_t* targets, std::size_t seq, std::size_t target_row_stride, float* lse, float* loss,
                           void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
    detail::check_cross_entropy_forward_arguments("tewb::kernels::cross_entropy_forward", logits, logits_dtype, rows, vocab,
                                                  targets, seq, target_row_stride, lse, loss, workspace, workspace_bytes,
                                                  cross_entropy_forward_workspace_bytes(rows, vocab));
    detail::launch_cross_entropy_forward(logits, logits_dtype, rows, vocab, targets, seq, target_row_stride, lse, loss,
                                         static_cast<double*>(workspace), stream);
}

std::size_t cross_entropy_forward_workspace_bytes(std::size_t rows, std::size_t /*vocab*/) {
    return detail::cross_entropy_blocks(rows) * sizeof(double);
}

void cross_entropy_backward(const void* logits, DType logits_dtype, std::size_t rows, std::size_t vocab,
                            const std::int64_t* targets, std::size_t seq, std::size_t target_row_stride, const float* lse,
                            const float* grad_loss, void* dlogits, DType dlogits_dtype, cudaStream_t stream) {
    detail::check_cross_entropy_backward_arguments("tewb::kernels::cross_entropy_backward", logits, logits_dtype, rows, vocab,
                                                   targets, seq, target_row_stride, lse, grad_loss, dlogits, dlogits_dtype);
    detail::launch_cross_entropy_backward(logits, logits_dtype, rows, vocab, targets, seq, target_row_stride, lse, grad_loss,
                                          dlogits, dlogits_dtype, stream);
}

void cross_entropy_forward_with_grad(void* logits, DType logits_dtype, std::size_t rows, std::size_t vocab,
                                     const std::int64_t* targets, std::size_t seq, std::size_t target_row_stride, float* lse,
                                     float* loss, void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
    detail::check_cross_entropy_forward_with_grad_arguments(
        "tewb::kernels::cross_entropy_forward_with_grad", logits, logits_dtype, rows, vocab, targets, seq, target_row_stride, lse,
        loss, workspace, workspace_bytes, cross_entropy_forward_workspace_bytes(rows, vocab));
    detail::launch_cross_entropy_forward_with_grad(logits, logits_dtype, rows, vocab, targets, seq, target_row_stride, lse, loss,
                                                   static_cast<double*>(workspace), stream);
}

}  // namespace tewb::kernels

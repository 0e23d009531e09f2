#pragma once

// The host cross-entropy (tewb_kernels/loss.h) called as the loss suite's cases are written: lse, loss and grad_loss
// as float buffers; each call builds the tensors its entry point takes.
#include <cstddef>

#include "tewb_kernels/loss.h"

namespace tewb::test::calls {

inline kernels::Tensor floats(const float* p, std::size_t n) {
    return kernels::input(p, kernels::DType::Float32, 1, n);
}

inline void cross_entropy_forward(const kernels::Tensor& logits, const kernels::Tensor& targets, float* lse, float* loss,
                                  const kernels::Workspace& workspace) {
    kernels::host::cross_entropy_forward(logits, targets, floats(lse, logits.rows), floats(loss, 1), workspace, {});
}

inline void cross_entropy_backward(const kernels::Tensor& logits, const kernels::Tensor& targets, const float* lse,
                                   const float* grad_loss, const kernels::Tensor& dlogits) {
    kernels::host::cross_entropy_backward(logits, targets, floats(lse, logits.rows), floats(grad_loss, 1), dlogits, {});
}

inline void cross_entropy_forward_with_grad(const kernels::Tensor& logits, const kernels::Tensor& targets, float* lse,
                                            float* loss, const kernels::Workspace& workspace) {
    kernels::host::cross_entropy_forward_with_grad(logits, targets, floats(lse, logits.rows), floats(loss, 1), workspace, {});
}

}  // namespace tewb::test::calls

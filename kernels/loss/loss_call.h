#pragma once

#include <cstddef>
#include <cstdint>

#include "common/tokens.h"
#include "tewb_kernels/tensor.h"

// One cross-entropy call's checked arguments as the kernels (loss.cu) and the host twins (loss_host.cpp) work on them,
// and the rules that make them (loss_checks.cpp). Each fails with KernelError "<call>: <what>". rows == 0 is refused on both paths (the
// loss is a mean over rows: over none it is undefined), so every accepted call has work.
namespace tewb::kernels::detail {

// The forward's (with_grad: cross_entropy_forward_with_grad's, whose targets, lse, loss and workspace must stay apart
// from the logits it overwrites).
struct CrossEntropyForwardCall {
    Tensor logits;
    TokensRef targets;
    float* lse = nullptr;
    float* loss = nullptr;
    Workspace workspace;
};
CrossEntropyForwardCall cross_entropy_forward_call(const char* call, const Tensor& logits, const Tensor& targets, const Tensor& lse,
                                                   const Tensor& loss, const Workspace& workspace, bool with_grad);

// dlogits may be logits itself (in place) with the same dtype; any other overlap is refused.
struct CrossEntropyBackwardCall {
    Tensor logits;
    TokensRef targets;
    const float* lse = nullptr;
    const float* grad_loss = nullptr;
    Tensor dlogits;
};
CrossEntropyBackwardCall cross_entropy_backward_call(const char* call, const Tensor& logits, const Tensor& targets,
                                                     const Tensor& lse, const Tensor& grad_loss, const Tensor& dlogits);

// The target of row r: targets[(r / seq) * target_row_stride + r % seq] (a narrow() of [batch, seq + 1] tokens
// has target_row_stride seq + 1).
constexpr std::size_t cross_entropy_target_index(std::size_t row, std::size_t seq, std::size_t target_row_stride) {
    return (row / seq) * target_row_stride + row % seq;
}

}  // namespace tewb::kernels::detail

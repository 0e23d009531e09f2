#pragma once

#include <cstddef>
#include <cstdint>

#include "tewb_kernels/dtype.h"
#include "tewb_kernels/tensor_ref.h"

// The cross-entropy argument rules, one copy for the kernels (loss_api.cpp) and the host implementation
// (loss_host.cpp). Each fails with KernelError "<call>: <what>". rows == 0 is refused on both paths (the
// loss is a mean over rows: over none it is undefined), so every accepted call has work.
namespace tewb::kernels::detail {

// needed_workspace: what the path's own cross_entropy_forward_workspace_bytes returns for rows and vocab.
void check_cross_entropy_forward_arguments(const char* call, const ConstTensorRef& logits, const TokensRef& targets,
                                           const float* lse, const float* loss, const Workspace& workspace,
                                           std::size_t needed_workspace);

// The forward's rules, and targets, lse, loss and the workspace apart from the logits (which are overwritten).
void check_cross_entropy_forward_with_grad_arguments(const char* call, const ConstTensorRef& logits, const TokensRef& targets,
                                                     const float* lse, const float* loss, const Workspace& workspace,
                                                     std::size_t needed_workspace);

// dlogits may be logits itself (in place) with the same dtype; any other overlap is refused.
void check_cross_entropy_backward_arguments(const char* call, const ConstTensorRef& logits, const TokensRef& targets,
                                            const float* lse, const float* grad_loss, const TensorRef& dlogits);

// The target of row r: targets[(r / seq) * target_row_stride + r % seq] (a narrow() of [batch, seq + 1] tokens
// has target_row_stride seq + 1).
constexpr std::size_t cross_entropy_target_index(std::size_t row, std::size_t seq, std::size_t target_row_stride) {
    return (row / seq) * target_row_stride + row % seq;
}

}  // namespace tewb::kernels::detail

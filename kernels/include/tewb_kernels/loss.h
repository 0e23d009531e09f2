#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "tewb_kernels/dtype.h"
#include "tewb_kernels/tensor_ref.h"

namespace tewb::kernels {

// Softmax cross-entropy of a causal LM, mean over tokens (LibTorch's cross_entropy with mean reduction).
// logits [rows, vocab] row-major, float32 or bfloat16, rows = batch * seq with targets [batch, seq]. The target
// of row r is targets.data[(r / seq) * targets.row_stride + r % seq] (int64, TokensRef in tensor_ref.h; a
// narrow() of the [batch, seq + 1] token tensor has row_stride seq + 1, a contiguous [batch, seq] one seq). A target outside [0,
// vocab) makes that row's loss NaN, so the mean is NaN, and its dlogits row NaN (the kernels cannot throw; the host twin does the
// same). rows == 0 is refused (a mean over no tokens is undefined). Device pointers; the stream last. Exactness and the summation
// order: tewb_kernels/host/loss.h.

// One launch: lse[r] = logsumexp of row r (float32, max-subtracted, online in one read of the row), saved for
// the backward; loss[0] = mean over rows of lse[r] - logits[r, target(r)]. The mean is deterministic: each
// block writes the double sum of its rows' losses to the workspace and the last block to arrive adds them
// in block order. Its arrival counter is one per translation unit and resets itself, so forward calls must
// not run on two streams at once (as the column sums, common/column_sum.cuh).
void cross_entropy_forward(const ConstTensorRef& logits, const TokensRef& targets, float* lse, float* loss,
                           const Workspace& workspace, cudaStream_t stream);

// The forward's workspace: min(rows, 1024) doubles (8-byte aligned).
std::size_t cross_entropy_forward_workspace_bytes(std::size_t rows, std::size_t vocab);

// One launch: dlogits[r, c] = (exp(logits[r, c] - lse[r]) - (c == target(r))) * grad_loss[0] / rows, float32
// math, stored in dlogits ([rows, vocab], float32 or bfloat16). grad_loss is a device scalar (the loss's incoming
// gradient). dlogits may be logits itself (in place, the same dtype): each element is read before it is written.
void cross_entropy_backward(const ConstTensorRef& logits, const TokensRef& targets, const float* lse, const float* grad_loss,
                            const TensorRef& dlogits, cudaStream_t stream);

// One launch: the forward and, in the same kernel, the backward for grad_loss 1, in place. lse, loss and the
// workspace as cross_entropy_forward (bit for bit the same values; the same workspace, and the same arrival
// counter, so not on two streams at once with either forward); then each row of logits is overwritten with
// (exp(logits[r, c] - lse[r]) - (c == target(r))) / rows in logits_dtype, bit for bit what cross_entropy_backward
// writes with grad_loss[0] == 1 and dlogits == logits. A block does a row's gradient as soon as it has the row's
// lse, re-reading the row (from L2 where the blocks' rows in flight fit). A target outside [0, vocab): NaN loss
// and NaN gradient row. targets, lse, loss and the workspace must not overlap the logits. For a loss whose
// incoming gradient is 1 (the training loss itself); otherwise forward then backward.
void cross_entropy_forward_with_grad(const TensorRef& logits, const TokensRef& targets, float* lse, float* loss,
                                     const Workspace& workspace, cudaStream_t stream);

}  // namespace tewb::kernels

#pragma once

#include <cstddef>

#include "tewb_kernels/entry_points.h"
#include "tewb_kernels/tensor.h"

// Softmax cross-entropy of a causal LM, mean over tokens (LibTorch's cross_entropy with mean reduction).
// logits [rows, vocab] row-major, float32 or bfloat16, rows = batch * seq with targets [batch, seq]. The target
// of row r is targets.data[(r / seq) * targets.stride() + r % seq] (an int64 tensor; a narrow() of the
// [batch, seq + 1] token tensor has row_stride seq + 1, a contiguous [batch, seq] one seq). A target outside
// [0, vocab) makes that row's loss NaN, so the mean is NaN, and its dlogits row NaN (the kernels cannot throw; the
// host twin does the same). rows == 0 is refused (a mean over no tokens is undefined). lse ([1, rows]), loss and
// grad_loss ([1, 1]) are float32 tensors.
//
// The host twins: the same checks and semantics (an out-of-range target gives a NaN row, not an exception, as on the
// GPU), the same launch counts; the host forward writes the blocks' partial sums (doubles) to the workspace as the
// kernel does. Order. A row's logsumexp follows the kernel: 256 threads (8 warps) per row; thread t takes vectors
// t, t + 256, ... of the row (16 bytes where the row starts 16-byte aligned: 4 float32 or 8 bfloat16 logits,
// otherwise single logits, loss/loss_rule.h) and keeps an online pair (max m from -FLT_MAX, sum s): per
// vector, where the vector's fmax exceeds m, s = s * exp(m - max) and m = max, then s += exp(x - m) for its
// logits in order; pairs combine as (max of both, s1 * exp(m1 - m) + s2 * exp(m2 - m)), by the warp's xor
// butterfly, then warps 0..7 in order; lse = m + log(s). The row's loss is lse - logits[r, target] in float32;
// block b of min(rows, 1024) adds rows b, b + blocks, ... in a double, and the blocks' doubles are added in
// order and divided by rows (double, rounded to float once): the mean does not depend on scheduling.
//
// Exactness. Not bit for bit the GPU's (CUDA's expf is within 2 ulp, the host's within 1; logf likewise),
// but the same float32 order. With k = ceil(vocab / 256) (the most logits one thread adds) and M the row's
// largest |logit|, against double precision of the same float inputs (tst_host_loss; measured worst: lse and
// loss 9 % of their bounds, the loss within 1e-7 relatively; dlogits a third of its bound):
//   |lse - exact| <= 2^-21 * (k + 32) + 2^-22 * (M + |lse|)   (the sums' worst case grows with k; the
//     second term is float32's rounding of the exponents x - m);
//   |loss - exact| <= the mean over rows of that bound + 2^-23 * |loss|;
//   backward, from the saved lse, with p = exp(x - lse) and g = grad_loss / rows:
//     |dlogits - exact| <= 2^-22 * |g| * (p * (1 + |x - lse|) + |p - onehot|),
//   plus half a bfloat16 ulp where dlogits is bfloat16. The CUDA kernels run the same float32 algorithm and
// are expected within the same bounds (not measured: no GPU). Edges: a -inf logit adds 0 (a row of only
// -inf has lse -inf and a NaN loss); a NaN or +inf logit makes the row's lse NaN.
TEWB_ENTRY_POINTS(
// One launch: lse[r] = logsumexp of row r (float32, max-subtracted, online in one read of the row), saved for
// the backward; loss[0] = mean over rows of lse[r] - logits[r, target(r)]. The mean is deterministic: each
// block writes the double sum of its rows' losses to the workspace and the last block to arrive adds them
// in block order. Its arrival counter is one per translation unit and resets itself, so forward calls must
// not run on two streams at once (as the column sums, common/column_sum.cuh).
void cross_entropy_forward(const Tensor& logits, const Tensor& targets, const Tensor& lse, const Tensor& loss,
                           const Workspace& workspace, Stream stream);

// One launch: dlogits[r, c] = (exp(logits[r, c] - lse[r]) - (c == target(r))) * grad_loss[0] / rows, float32
// math, stored in dlogits ([rows, vocab], float32 or bfloat16). grad_loss is a device scalar (the loss's incoming
// gradient). dlogits may be logits itself (in place, the same dtype): each element is read before it is written.
void cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse, const Tensor& grad_loss,
                            const Tensor& dlogits, Stream stream);

// One launch: the forward and, in the same kernel, the backward for grad_loss 1, in place. lse, loss and the
// workspace as cross_entropy_forward (bit for bit the same values; the same workspace, and the same arrival
// counter, so not on two streams at once with either forward); then each row of logits is overwritten with
// (exp(logits[r, c] - lse[r]) - (c == target(r))) / rows in logits_dtype, bit for bit what cross_entropy_backward
// writes with grad_loss[0] == 1 and dlogits == logits. A block does a row's gradient as soon as it has the row's
// lse, re-reading the row (from L2 where the blocks' rows in flight fit). A target outside [0, vocab): NaN loss
// and NaN gradient row. targets, lse, loss and the workspace must not overlap the logits. For a loss whose
// incoming gradient is 1 (the training loss itself); otherwise forward then backward.
void cross_entropy_forward_with_grad(const Tensor& logits, const Tensor& targets, const Tensor& lse, const Tensor& loss,
                                     const Workspace& workspace, Stream stream);
)

namespace tewb::kernels {

// The forward's workspace: min(rows, 1024) doubles (8-byte aligned).
std::size_t cross_entropy_forward_workspace_bytes(std::size_t rows, std::size_t vocab);

}  // namespace tewb::kernels

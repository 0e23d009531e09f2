#pragma once

#include <cstddef>
#include <cstdint>

#include "tewb_kernels/dtype.h"
#include "tewb_kernels/tensor_ref.h"

// Softmax cross-entropy (tewb_kernels/loss.h) over host memory: the same arguments, checks and semantics, minus
// the stream (an out-of-range target gives a NaN row, not an exception, as on the GPU). Errors name
// "tewb::kernels::host::<function>". Each call counts the launches the CUDA path makes (launch_count.h).
//
// Order. A row's logsumexp follows the kernel: 256 threads (8 warps) per row; thread t takes vectors
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
namespace tewb::kernels::host {

// One launch. Writes the blocks' partial sums (doubles) to the workspace as the kernel does.
void cross_entropy_forward(const ConstTensorRef& logits, const TokensRef& targets, float* lse, float* loss,
                           const Workspace& workspace);

// The CUDA value: min(max(rows, 1), 1024) * sizeof(double).
std::size_t cross_entropy_forward_workspace_bytes(std::size_t rows, std::size_t vocab);

// One launch; dlogits may be logits (in place, the same dtype).
void cross_entropy_backward(const ConstTensorRef& logits, const TokensRef& targets, const float* lse, const float* grad_loss,
                            const TensorRef& dlogits);

// One launch: cross_entropy_forward, then cross_entropy_backward's row routine with grad_loss 1 over the logits
// in place, so lse, loss, the workspace and the gradient are bit for bit those two calls' (tst_host_loss).
void cross_entropy_forward_with_grad(const TensorRef& logits, const TokensRef& targets, float* lse, float* loss,
                                     const Workspace& workspace);

}  // namespace tewb::kernels::host

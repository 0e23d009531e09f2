#pragma once

#include <cstddef>

#include "tewb_kernels/amax.h"
#include "tewb_kernels/entry_points.h"
#include "tewb_kernels/tensor.h"

// LayerNorm and RMSNorm over the last dimension of x [rows, hidden], float32 math. x and the high-precision outputs
// are float32 or bfloat16; gamma (and beta) [1, hidden] float32 or bfloat16, one dtype; the saved statistics mean
// and rstd are float32 with rows elements. A forward writes y to `out` (its own dtype, [rows, hidden]) when
// out.data is set, and its FP8 form to `fp8` ([rows, hidden], E4M3 or E5M2: fp8(y · fp8.scale[0]); max |y|
// combined into fp8.amax[0] when set; the transposed copy [hidden, rows] too when fp8.transposed is set) when
// fp8.data is set: at least one of the two. rows == 0 does nothing. Backward passes take the saved statistics;
// dy [rows, hidden] has its own dtype (under mixed precision x is the float32 residual stream while dy arrives in
// bfloat16); dx has x's dtype and shape, dgamma and dbeta gamma's. Their dgamma/dbeta partial rows are added in
// one fixed order whatever the schedule, so results do not depend on it; they use arrival counters that the launch
// leaves zeroed (common/column_sum.cuh): not on two streams at once. The *_add passes add `dresidual` (x's dtype
// and shape, aligned like x; data null: nothing) to dx after dx is computed in float32 and before it is stored: the
// gradient x also gets through a skip connection; dresidual may be dx itself.
//
// Exactness of the host twins. LayerNorm's follow the kernel's float32 arithmetic and its summation order: the
// row sums (mean, variance; the backward's sums of dy * gamma and dy * gamma * xhat) per thread in the kernel's column
// ownership, then the warp's butterfly and the warps in order; dgamma/dbeta in the kernel's partial rows and
// its fixed final order. Which GPU kernel (fast or plain) the order follows is decided by the CUDA rule from
// hidden, x's dtype, the 16-byte alignment of the pointers given and (forward) whether the FP8 transposed
// copy is asked for. It is still not bit for bit the GPU's
// result: nvcc fuses multiply-adds (one rounding where the host has two) and the fast forward kernel takes
// rsqrtf (2 ulp) where the host takes 1 / sqrt. Against a double-precision LayerNorm of the same inputs
// (tst_host_normalization; measured worst about a quarter of each bound), with xhat = (x - mean) * rstd:
//   forward, float32 out: |y - exact| <= 2^-21 * (|gamma| * (1 + |xhat| + rstd * mean|x|) + |beta|)
//     (the last term is the float32 mean's error scaled by rstd: large for rows of near-constant x);
//     mean within 2^-21 * mean|x|, rstd within 2^-21 relatively;
//   backward, from the saved mean and rstd: |dx - exact| <= 2^-19 * rstd * (|dy * gamma| + mean|dy * gamma|
//     + |xhat| * mean|dy * gamma * xhat|) (a difference with cancellation); dgamma, dbeta within 2^-20 of
//     the sum over rows of their terms' magnitudes.
// bfloat16 stores add their rounding (up to half a bfloat16 ulp). The CUDA kernels run the same float32
// algorithm and are expected within the same bounds (not measured here: no GPU), so host and GPU should
// agree to about twice them. The FP8 output is float_to_fp8 of the float32 y times scale[0] (before out's
// rounding, as the kernel), amax the largest |y| combined into fp8.amax as the kernel's atomicMax on the
// bits (larger kept, NaN wins). A NaN or inf in a row of x makes that row's y NaN (inf - inf in the variance).
// RMSNorm's forward twin follows the kernels' float32 operations one
// for one: the sum of squares as fused multiply-adds (the kernels' __fmaf_rn) per thread in the kernel's column
// ownership (the plain kernel: column c to lane c % 32; the fast one: LayerNorm's fast order), the warp's
// butterfly (and the warps in order), 1 / sqrt (correctly rounded on both); y = (x * rstd) * gamma. So host and
// GPU should agree bit for bit (not yet measured: no GPU). The plain backward's twin the same way: the sum of
// g * xhat per lane, dx = rstd * (g - xhat * mean) with each product rounded apart (the kernel's __fmul_rn),
// dgamma's partial rows per chunk of rows (fused multiply-adds) summed from 0.0f in chunk order; the fast
// backward's as LayerNorm's (its order; nvcc's fused multiply-adds not followed). Against a
// double-precision RMSNorm of the same inputs (tst_host_normalization), with xhat = x * rstd:
//   forward: |y - exact| <= 2^-21 * |gamma| * (1 + |xhat|); rstd within 2^-21 relatively;
//   backward, from the saved rstd: |dx - exact| <= 2^-19 * rstd * (|g| + |xhat| * mean|g * xhat|);
//   dgamma within 2^-20 of the sum over rows of |dy * xhat|.
// bfloat16 stores add their rounding. A NaN in a row of x makes that row's y and rstd NaN; an inf makes rstd 0,
// so y is NaN where x is inf and 0 elsewhere in the row (as the kernel; not cleaned). Launch counts as the
// CUDA path: forward 1; backward 1 on the fast kernel, else 2, 3 past 2048 column tiles of 256.
TEWB_ENTRY_POINTS(
// y = (x - mean) * rstd * gamma + beta with rstd = 1 / sqrt(var + eps) (biased variance); mean and rstd saved.
// One launch (the FP8 transposed copy, when asked for, is written by the same kernel; with it, rows longer than
// 4096 take the plain kernel, normalization/layer_norm_rule.h).
void layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, const Tensor& out,
                        const Tensor& fp8, const Tensor& mean, const Tensor& rstd, Stream stream);

// layer_norm_forward whose output goes to an FP8 cast under current scaling (the amax hand-off): out (required) as
// layer_norm_forward writes it, no FP8 output, and from max |out as stored| over the whole tensor the scale, scale_inv
// and staging entry that abs_max_current_scale(out, target...) writes, bit for bit, written by the launch's last block:
// one launch and one read of out fewer than the forward and then abs_max_current_scale. The target's floats must not
// lie in the call's tensors. With no rows: nothing but the scale of amax 0 (abs_max_current_scale's launch). The same
// one-stream rule as abs_max (a scratch word and counter of the kernel's own, left zero by its last block).
void layer_norm_forward_current_scale(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, const Tensor& out,
                                      const CurrentScaleTarget& target, const Tensor& mean, const Tensor& rstd, Stream stream);

// dx, dgamma and dbeta of the forward above. Launches: one where the fast kernel runs (x float32 with hidden a
// multiple of 4 up to 4096, or bfloat16 with a multiple of 8 up to 8192; dy, x, gamma, dx 16-byte aligned): its
// blocks write partial rows and the last ones to arrive add them into dgamma and dbeta (the fast kernel's first
// min(partial rows, 8) rows of each then hold its 8 class sums, layer_norm_dparams.cuh). Two elsewhere (dx; the
// partial rows, finished by the last block of each 256-column tile), three past 2048 such tiles
// (common/column_sum_rule.h). The workspace holds the partial rows (layer_norm_backward_workspace_bytes).
void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& gamma,
                         const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta, const Workspace& workspace, Stream stream);
void layer_norm_backward_add(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& gamma,
                             const Tensor& dx, const Tensor& dresidual, const Tensor& dgamma, const Tensor& dbeta,
                             const Workspace& workspace, Stream stream);

// layer_norm_backward_add whose dx is also the output gradient of the Linear that made x (its output went through a
// skip connection into this LayerNorm; dresidual may be null, as for a model's last LayerNorm): from the same pass,
// grad ([rows, hidden], float32 or bfloat16; data null: no copy) gets dx's copy for that Linear's GEMMs and dbias
// ([1, hidden] float32) dx's column sums (of dx as stored): its bias gradient, in place of a cast_dbias launch. On the
// fast kernel one launch, the sums a third set of partial rows finished as dgamma's are (the same order); elsewhere
// layer_norm_backward_add's launches and then cast_dbias over dx (its order, cast.h). grad and dbias must not overlap
// dy, x, dx, dresidual or each other. Workspace: layer_norm_backward_cast_dbias_workspace_bytes.
void layer_norm_backward_cast_dbias(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& gamma,
                                    const Tensor& dx, const Tensor& dresidual, const Tensor& dgamma, const Tensor& dbeta,
                                    const Tensor& grad, const Tensor& dbias, const Workspace& workspace, Stream stream);

// The same for a Linear whose backward runs in FP8: fp8 ([rows, hidden], E4M3 or E5M2, with fp8.transposed [hidden,
// rows] and fp8.scale required; fp8.amax optional) gets dx as stored, cast as cast_transpose_to_fp8 casts it (the same
// bytes), and dbias dx's column sums. One launch on the fast kernel for rows of at most 2048 elements: it takes bands
// of consecutive rows (normalization/layer_norm_rule.h; the band decides which rows each block sums, so the sums'
// order, different from layer_norm_backward_add's) and writes the transposed copy from a shared-memory stage.
// Elsewhere layer_norm_backward_add's launches and then cast_transpose_dbias_to_fp8 over dx (its order). Workspace:
// layer_norm_backward_cast_dbias_workspace_bytes.
void layer_norm_backward_quantize_dbias(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                        const Tensor& gamma, const Tensor& dx, const Tensor& dresidual, const Tensor& dgamma,
                                        const Tensor& dbeta, const Tensor& fp8, const Tensor& dbias, const Workspace& workspace,
                                        Stream stream);

// layer_norm_backward_cast_dbias without the copy (the Linear casts dx to FP8 itself) whose Linear runs under current
// scaling (the amax hand-off, as layer_norm_forward_current_scale): dx, dgamma, dbeta and dbias as that call writes them,
// and from max |dx as stored| the scale, scale_inv and staging entry abs_max_current_scale(dx, target...) writes, bit for
// bit: on the fast kernel in its one launch (its last block), elsewhere in abs_max_current_scale's launch after the plain
// ones. The target's floats must not lie in the call's tensors or workspace; no rows: the scale of amax 0. Workspace:
// layer_norm_backward_cast_dbias_workspace_bytes.
void layer_norm_backward_cast_dbias_current_scale(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                                  const Tensor& gamma, const Tensor& dx, const Tensor& dresidual, const Tensor& dgamma,
                                                  const Tensor& dbeta, const CurrentScaleTarget& target, const Tensor& dbias,
                                                  const Workspace& workspace, Stream stream);

// y = x * rstd * gamma with rstd = 1 / sqrt(mean(x^2) + eps); no mean is subtracted and there is no bias; rstd
// saved. One launch: LayerNorm's fast forward where its rules hold (the row read once, in registers; with the FP8
// transposed copy rows of at most 4096, bands of 8 to 64 rows staged in shared memory), else a warp per row (with the
// transposed copy, bands of 32 rows); either writes the copy from shared memory in the same launch.
void rms_norm_forward(const Tensor& x, const Tensor& gamma, float eps, const Tensor& out, const Tensor& fp8, const Tensor& rstd,
                      Stream stream);
// rms_norm_forward with current scaling's scale of out, as layer_norm_forward_current_scale.
void rms_norm_forward_current_scale(const Tensor& x, const Tensor& gamma, float eps, const Tensor& out,
                                    const CurrentScaleTarget& target, const Tensor& rstd, Stream stream);

// dx and dgamma of rms_norm_forward: with g = dy * gamma and xhat = x * rstd, dx = rstd * (g - xhat * mean(g * xhat))
// and dgamma = the column sums of dy * xhat. Launches: one on LayerNorm's fast backward (its rules: whole 16-byte
// vectors, aligned pointers, hidden <= 8192 bfloat16 / 4096 float32), else two (dx, a warp per row; dgamma's partial
// rows over chunks of rows, row k of the workspace holding chunk k's sums, finished by the last block of each
// 256-column tile), three past 2048 such tiles.
void rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& rstd, const Tensor& gamma, const Tensor& dx,
                       const Tensor& dgamma, const Workspace& workspace, Stream stream);
void rms_norm_backward_add(const Tensor& dy, const Tensor& x, const Tensor& rstd, const Tensor& gamma, const Tensor& dx,
                           const Tensor& dresidual, const Tensor& dgamma, const Workspace& workspace, Stream stream);
// rms_norm_backward_add (dresidual may be null) whose dx is also the output gradient of a Linear whose FP8 cast runs
// under current scaling (the amax hand-off, as layer_norm_backward_cast_dbias_current_scale, without the column sums:
// RMSNorm's models have no biases): dx and dgamma as that call writes them, and from max |dx as stored| the scale,
// scale_inv and staging entry abs_max_current_scale(dx, target...) writes, bit for bit: on the fast kernel in its one
// launch (its last block), elsewhere in abs_max_current_scale's launch after the plain ones. The target's floats must
// not lie in the call's tensors or workspace; no rows: the scale of amax 0. Workspace: rms_norm_backward_workspace_bytes.
void rms_norm_backward_current_scale(const Tensor& dy, const Tensor& x, const Tensor& rstd, const Tensor& gamma, const Tensor& dx,
                                     const Tensor& dresidual, const Tensor& dgamma, const CurrentScaleTarget& target,
                                     const Workspace& workspace, Stream stream);
// rms_norm_backward_add (dresidual may be null) whose dx is also the output gradient of the Linear that made x, for that
// Linear's BF16 (or float32) GEMMs (as layer_norm_backward_cast_dbias, without the column sums: RMSNorm's models have no
// biases): grad ([rows, hidden], float32 or bfloat16) gets dx as stored, converted to its dtype, from the same pass, in
// place of a cast launch. One launch on LayerNorm's fast kernel (rms_norm_backward's rule), elsewhere
// rms_norm_backward_add's launches, the dx kernel writing the copy beside dx. grad must not overlap another tensor of
// the call or the workspace. Workspace: rms_norm_backward_workspace_bytes.
void rms_norm_backward_cast(const Tensor& dy, const Tensor& x, const Tensor& rstd, const Tensor& gamma, const Tensor& dx,
                            const Tensor& dresidual, const Tensor& dgamma, const Tensor& grad, const Workspace& workspace,
                            Stream stream);
// The same for a Linear whose backward runs in FP8 with its scale known before the pass (delayed scaling): fp8
// ([rows, hidden], E4M3 or E5M2, with fp8.transposed [hidden, rows] and fp8.scale required; fp8.amax optional, max |dx|
// as stored combined into it) gets dx as stored, cast as cast_transpose_to_fp8 casts it (the same bytes). One launch on
// LayerNorm's banded FP8 backward (kRms) for rows of at most kLayerNormBackwardFp8MaxHidden elements where the fast
// kernel's rule holds (the band decides which rows each block sums: dgamma's order differs from rms_norm_backward_add's
// there); elsewhere rms_norm_backward_add's launches (the fast kernel where its rule holds) and then cast_transpose_to_fp8
// over dx. Workspace: rms_norm_backward_workspace_bytes.
void rms_norm_backward_quantize(const Tensor& dy, const Tensor& x, const Tensor& rstd, const Tensor& gamma, const Tensor& dx,
                                const Tensor& dresidual, const Tensor& dgamma, const Tensor& fp8, const Workspace& workspace,
                                Stream stream);
)

namespace tewb::kernels {

// The backward passes' scratch for their partial rows: 2 * min(max(rows, 1), 256) * hidden floats (dgamma's and
// dbeta's); RMSNorm's min(max(rows, 1), 256) * hidden (dgamma's).
std::size_t layer_norm_backward_workspace_bytes(std::size_t rows, std::size_t hidden);
// layer_norm_backward_cast_dbias's and layer_norm_backward_quantize_dbias's: 3 * min(max(rows, 1), 256) * hidden floats.
std::size_t layer_norm_backward_cast_dbias_workspace_bytes(std::size_t rows, std::size_t hidden);
std::size_t rms_norm_backward_workspace_bytes(std::size_t rows, std::size_t hidden);

}  // namespace tewb::kernels

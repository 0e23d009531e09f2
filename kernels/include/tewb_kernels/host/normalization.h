#pragma once

#include <cstddef>

#include "tewb_kernels/dtype.h"
#include "tewb_kernels/fp8_output.h"
#include "tewb_kernels/tensor_ref.h"

// LayerNorm (tewb_kernels/normalization.h) over host memory: the same arguments, checks and semantics, minus
// the stream. Errors name "tewb::kernels::host::<function>". Each call counts the launches the CUDA path
// makes for the same arguments (launch_count.h).
//
// Exactness. The host follows the kernel's float32 arithmetic and its summation order: the row sums (mean,
// variance; the backward's sums of dy * gamma and dy * gamma * xhat) per thread in the kernel's column
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
// rounding, as the kernel), amax the largest |y| combined into fp8->amax as the kernel's atomicMax on the
// bits (larger kept, NaN wins). A NaN or inf in a row of x makes that row's y NaN (inf - inf in the variance).
namespace tewb::kernels::host {

// One launch (the FP8 transposed copy, when asked for, is written by the same kernel). With
// fp8->transposed, rows longer than 4096 take the plain kernel's order (normalization/layer_norm_rule.h).
void layer_norm_forward(const ConstTensorRef& x, const ConstTensorRef& gamma, const ConstTensorRef& beta, float eps,
                        const TensorRef& out, const Fp8Output* fp8, float* mean, float* rstd);

// The CUDA value: 2 * min(max(rows, 1), 256) * hidden floats.
std::size_t layer_norm_backward_workspace_bytes(std::size_t rows, std::size_t hidden);

// Writes the partial dgamma/dbeta rows to the workspace as the kernel does (the fast kernel's first
// min(partial rows, 8) rows of each then hold its 8 class sums, layer_norm_dparams.cuh). One launch where
// the fast kernel runs (x float32 with hidden a multiple of 4 up to 4096, or bfloat16 with a multiple of 8
// up to 8192, and dy, x, gamma, dx 16-byte aligned): dx and the partial rows, finished by the last blocks
// to arrive. Two elsewhere (dx; the partial rows, finished by the last block of each 256-column tile),
// three past 2048 such tiles (common/column_sum_rule.h).
void layer_norm_backward(const ConstTensorRef& dy, const ConstTensorRef& x, const float* mean, const float* rstd,
                         const ConstTensorRef& gamma, const TensorRef& dx, const TensorRef& dgamma, const TensorRef& dbeta,
                         const Workspace& workspace);

// The same with dresidual added to dx before it is stored (tewb::kernels::layer_norm_backward_add); the same
// launches.
void layer_norm_backward_add(const ConstTensorRef& dy, const ConstTensorRef& x, const float* mean, const float* rstd,
                             const ConstTensorRef& gamma, const TensorRef& dx, const ConstTensorRef& dresidual,
                             const TensorRef& dgamma, const TensorRef& dbeta, const Workspace& workspace);

// RMSNorm (tewb_kernels/normalization.h's rms_norm_*). The host follows the kernels' float32 operations one
// for one: the sum of squares per lane (column c to lane c % 32, fused multiply-adds as the kernel's
// __fmaf_rn), the warp's butterfly, 1 / sqrt (correctly rounded on both); y = (x * rstd) * gamma; the
// backward's sum of g * xhat the same way, dx = rstd * (g - xhat * mean) with each product rounded apart
// (the kernel's __fmul_rn), dgamma's partial rows per chunk of rows (fused multiply-adds) summed from 0.0f in
// chunk order. So host and GPU should agree bit for bit (not yet measured: no GPU). Against a
// double-precision RMSNorm of the same inputs (tst_host_normalization), with xhat = x * rstd:
//   forward: |y - exact| <= 2^-21 * |gamma| * (1 + |xhat|); rstd within 2^-21 relatively;
//   backward, from the saved rstd: |dx - exact| <= 2^-19 * rstd * (|g| + |xhat| * mean|g * xhat|);
//   dgamma within 2^-20 of the sum over rows of |dy * xhat|.
// bfloat16 stores add their rounding. A NaN in a row of x makes that row's y and rstd NaN; an inf makes rstd 0,
// so y is NaN where x is inf and 0 elsewhere in the row (as the kernel; not cleaned). Launch counts as the
// CUDA path: forward 1; backward 2, 3 past 2048 column tiles of 256.
void rms_norm_forward(const ConstTensorRef& x, const ConstTensorRef& gamma, float eps, const TensorRef& out, const Fp8Output* fp8,
                      float* rstd);

// The CUDA value: min(max(rows, 1), 256) * hidden floats.
std::size_t rms_norm_backward_workspace_bytes(std::size_t rows, std::size_t hidden);

// Writes dgamma's partial rows to the workspace as the kernel does (row k: chunk k's sums).
void rms_norm_backward(const ConstTensorRef& dy, const ConstTensorRef& x, const float* rstd, const ConstTensorRef& gamma,
                       const TensorRef& dx, const TensorRef& dgamma, const Workspace& workspace);

void rms_norm_backward_add(const ConstTensorRef& dy, const ConstTensorRef& x, const float* rstd, const ConstTensorRef& gamma,
                           const TensorRef& dx, const ConstTensorRef& dresidual, const TensorRef& dgamma,
                           const Workspace& workspace);

}  // namespace tewb::kernels::host

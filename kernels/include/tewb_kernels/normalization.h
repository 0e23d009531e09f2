#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "tewb_kernels/dtype.h"
#include "tewb_kernels/fp8_output.h"
#include "tewb_kernels/tensor_ref.h"

namespace tewb::kernels {

// LayerNorm over the last dimension of x [rows, hidden], float32 math: y = (x - mean) * rstd * gamma + beta
// with rstd = 1 / sqrt(var + eps) (biased variance). x and the outputs are float32 or bfloat16; gamma and
// beta [1, hidden] float32 or bfloat16, one dtype. Saves mean and rstd ([rows] float32) for the backward.
// Writes y to `out` ([rows, hidden], its own dtype) when out.data is not null, and its FP8 form when fp8 is
// not null (at least one of the two). Device pointers; rows == 0 does nothing.
void layer_norm_forward(const ConstTensorRef& x, const ConstTensorRef& gamma, const ConstTensorRef& beta, float eps,
                        const TensorRef& out, const Fp8Output* fp8, float* mean, float* rstd, cudaStream_t stream);

// Scratch the backward needs for dgamma/dbeta's partial rows: 2 * min(max(rows, 1), 256) * hidden floats.
std::size_t layer_norm_backward_workspace_bytes(std::size_t rows, std::size_t hidden);

// dx (x's dtype and shape), dgamma and dbeta (gamma's dtype and shape, [1, hidden]) of the forward above, from
// the saved mean and rstd. dy [rows, hidden] has its own dtype: under mixed precision x is the float32 residual
// stream while dy arrives in bfloat16.
// Launches: one where the fast kernel runs (x float32 with hidden a multiple of 4 up to 4096, or bfloat16
// with a multiple of 8 up to 8192; dy, x, gamma, dx 16-byte aligned): its blocks write partial rows and the
// last ones to arrive add them into dgamma and dbeta. Two elsewhere (dx; the partial rows, finished by the
// last block of each 256-column tile), three past 2048 such tiles. The partial rows are added in one fixed
// order whatever the schedule, so the results do not depend on it. Uses arrival counters that the launch
// leaves zeroed (common/column_sum.cuh): not on two streams at once.
void layer_norm_backward(const ConstTensorRef& dy, const ConstTensorRef& x, const float* mean, const float* rstd,
                         const ConstTensorRef& gamma, const TensorRef& dx, const TensorRef& dgamma, const TensorRef& dbeta,
                         const Workspace& workspace, cudaStream_t stream);

// layer_norm_backward with `dresidual` (x's dtype and shape, aligned like x; data null: nothing) added to dx in
// the same pass, after dx is computed in float32 and before it is stored: the gradient x also gets through a skip
// connection, summed here instead of by a separate add. dresidual may be dx itself.
void layer_norm_backward_add(const ConstTensorRef& dy, const ConstTensorRef& x, const float* mean, const float* rstd,
                             const ConstTensorRef& gamma, const TensorRef& dx, const ConstTensorRef& dresidual,
                             const TensorRef& dgamma, const TensorRef& dbeta, const Workspace& workspace, cudaStream_t stream);

// RMSNorm over the last dimension of x [rows, hidden], float32 math: y = x * rstd * gamma with
// rstd = 1 / sqrt(mean(x^2) + eps); no mean is subtracted and there is no bias. x and out float32 or bfloat16,
// gamma [1, hidden] float32 or bfloat16. Saves rstd ([rows] float32) for the backward. Writes y to `out`
// ([rows, hidden], its own dtype) when out.data is not null, and its FP8 form (amax, the transposed copy when
// asked) when fp8 is not null (at least one of the two). Device pointers; rows == 0 does nothing.
// One launch: a warp per row; with the FP8 transposed copy, bands of 32 rows whose copy is written from
// shared memory in the same launch.
void rms_norm_forward(const ConstTensorRef& x, const ConstTensorRef& gamma, float eps, const TensorRef& out, const Fp8Output* fp8,
                      float* rstd, cudaStream_t stream);

// Scratch the RMSNorm backward needs for dgamma's partial rows: min(max(rows, 1), 256) * hidden floats.
std::size_t rms_norm_backward_workspace_bytes(std::size_t rows, std::size_t hidden);

// dx (x's dtype and shape) and dgamma (gamma's dtype and shape) of rms_norm_forward, from the saved rstd:
// with g = dy * gamma and xhat = x * rstd, dx = rstd * (g - xhat * mean(g * xhat)) and dgamma = the column sums
// of dy * xhat. dy [rows, hidden] has its own dtype (float32 or bfloat16).
// Launches: two (dx, a warp per row; dgamma's partial rows over chunks of rows, finished by the last block of
// each 256-column tile in one fixed order), three past 2048 such tiles. Uses arrival counters that the launch
// leaves zeroed (common/column_sum.cuh): not on two streams at once.
void rms_norm_backward(const ConstTensorRef& dy, const ConstTensorRef& x, const float* rstd, const ConstTensorRef& gamma,
                       const TensorRef& dx, const TensorRef& dgamma, const Workspace& workspace, cudaStream_t stream);

// rms_norm_backward with `dresidual` (x's dtype and shape; data null: nothing) added to dx before it is
// stored, as layer_norm_backward_add. dresidual may be dx itself.
void rms_norm_backward_add(const ConstTensorRef& dy, const ConstTensorRef& x, const float* rstd, const ConstTensorRef& gamma,
                           const TensorRef& dx, const ConstTensorRef& dresidual, const TensorRef& dgamma,
                           const Workspace& workspace, cudaStream_t stream);

}  // namespace tewb::kernels

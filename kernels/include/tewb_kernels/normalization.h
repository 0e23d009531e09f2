#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "tewb_kernels/dtype.h"
#include "tewb_kernels/fp8_output.h"

namespace tewb::kernels {

// LayerNorm over the last dimension of x [rows, hidden], float32 math: y = (x - mean) * rstd * gamma + beta
// with rstd = 1 / sqrt(var + eps) (biased variance). x and the outputs are float32 or bfloat16; gamma and
// beta float32 or bfloat16 (param_dtype). Saves mean and rstd ([rows] float32) for the backward. Writes y
// to `out` (out_dtype) when out is not null, and its FP8 form when fp8 is not null (at least one of the
// two). Device pointers; rows == 0 does nothing.
void layer_norm_forward(const void* x, DType x_dtype, const void* gamma, const void* beta, DType param_dtype, std::size_t rows,
                        std::size_t hidden, float eps, void* out, DType out_dtype, const Fp8Output* fp8, float* mean,
                        float* rstd, cudaStream_t stream);

// Scratch the backward needs for its two-stage dgamma/dbeta reduction.
std::size_t layer_norm_backward_workspace_bytes(std::size_t rows, std::size_t hidden);

// dx (x_dtype), dgamma and dbeta (param_dtype) of the forward above, from the saved mean and rstd. dy has
// its own dtype: under mixed precision x is the float32 residual stream while dy arrives in bfloat16.
void layer_norm_backward(const void* dy, DType dy_dtype, const void* x, DType x_dtype, const float* mean, const float* rstd,
                         const void* gamma,
                         DType param_dtype, std::size_t rows, std::size_t hidden, void* dx, void* dgamma, void* dbeta,
                         void* workspace, std::size_t workspace_bytes, cudaStream_t stream);

// layer_norm_backward with `dresidual` ([rows, hidden] in x_dtype, aligned like x; null: nothing) added to dx in
// the same pass, after dx is computed in float32 and before it is stored: the gradient x also gets through a skip
// connection, summed here instead of by a separate add. dresidual may be dx itself.
void layer_norm_backward_add(const void* dy, DType dy_dtype, const void* x, DType x_dtype, const float* mean, const float* rstd,
                             const void* gamma, DType param_dtype, std::size_t rows, std::size_t hidden, void* dx,
                             const void* dresidual, void* dgamma, void* dbeta, void* workspace, std::size_t workspace_bytes,
                             cudaStream_t stream);

}  // namespace tewb::kernels

#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "tewb_kernels/normalization.h"

namespace tewb::kernels::detail {

// Row chunks of the backward's dgamma/dbeta reduction; the workspace holds 2 * chunks * hidden floats.
int layer_norm_backward_chunks(std::size_t rows);

// Arguments already checked by the entry points in normalization_api.cpp.
void launch_layer_norm_forward(const void* x, DType x_dtype, const void* gamma, const void* beta, DType param_dtype,
                               std::size_t rows, std::size_t hidden, float eps, void* out, DType out_dtype,
                               const Fp8Output* fp8, float* mean, float* rstd, cudaStream_t stream);
// dresidual: null, or added to dx before it is stored (layer_norm_backward_add).
void launch_layer_norm_backward(const void* dy, DType dy_dtype, const void* x, DType x_dtype, const float* mean, const float* rstd,
                                const void* gamma, DType param_dtype, std::size_t rows, std::size_t hidden, void* dx,
                                const void* dresidual, void* dgamma, void* dbeta, void* workspace, cudaStream_t stream);

}  // namespace tewb::kernels::detail

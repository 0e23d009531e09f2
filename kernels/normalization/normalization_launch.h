#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "normalization/normalization_arguments.h"
#include "tewb_kernels/normalization.h"

namespace tewb::kernels::detail {

// Row chunks of the backward's dgamma/dbeta reduction; the workspace holds 2 * chunks * hidden floats.
int layer_norm_backward_chunks(std::size_t rows);

// Arguments already checked by the entry points in normalization_api.cpp.
void launch_layer_norm_forward(const LayerNormForwardCall& a, cudaStream_t stream);
// a.dresidual.data: null, or added to dx before it is stored (layer_norm_backward_add).
void launch_layer_norm_backward(const LayerNormBackwardCall& a, cudaStream_t stream);

// RMSNorm (rms_norm.cu): dgamma's partial rows, min(max(rows, 1), 256); arguments checked by the entry points.
int rms_norm_backward_chunks(std::size_t rows);
void launch_rms_norm_forward(const RmsNormForwardCall& a, cudaStream_t stream);
// a.dresidual.data: null, or added to dx before it is stored (rms_norm_backward_add).
void launch_rms_norm_backward(const RmsNormBackwardCall& a, cudaStream_t stream);

}  // namespace tewb::kernels::detail

#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "activation/activation_arguments.h"
#include "tewb_kernels/activation.h"

namespace tewb::kernels::detail {

// Row chunks of the backward's dbias reduction; the workspace holds chunks * cols floats.
int gelu_backward_chunks(std::size_t rows);

// Arguments already checked by the entry points in activation_api.cpp.
void launch_gelu_forward(const void* x, DType x_dtype, std::size_t rows, std::size_t cols, void* out, DType out_dtype,
                         const Fp8Output* fp8, cudaStream_t stream);
void launch_gelu_backward(const GeluBackwardCall& a, cudaStream_t stream);

}  // namespace tewb::kernels::detail

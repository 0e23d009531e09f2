#pragma once

#include <cuda_runtime_api.h>

#include "activation/swiglu_arguments.h"

namespace tewb::kernels::detail {

// Arguments already checked by the entry points in swiglu_api.cpp.
void launch_swiglu_forward(const ConstTensorRef& in, const TensorRef& out, const Fp8Output* fp8, cudaStream_t stream);
void launch_swiglu_backward(const SwigluBackwardCall& a, cudaStream_t stream);

}  // namespace tewb::kernels::detail

#pragma once

#include <cuda_runtime_api.h>

#include "attention/rotary_arguments.h"

namespace tewb::kernels::detail {

// Arguments already checked by the entry point in rotary_api.cpp.
void launch_rotary(const RotaryCall& a, cudaStream_t stream);

}  // namespace tewb::kernels::detail

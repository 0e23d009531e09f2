#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "tewb_kernels/dtype.h"

namespace tewb::kernels::detail {

// Arguments already checked by abs_max().
void launch_abs_max(const void* x, DType dtype, std::size_t n, float* amax_out, cudaStream_t stream);

}  // namespace tewb::kernels::detail

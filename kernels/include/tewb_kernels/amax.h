#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "tewb_kernels/dtype.h"

namespace tewb::kernels {

// amax_out[0] = max |x[i]| over n elements, as float32, written on `stream`. A NaN anywhere makes the
// result NaN (the FP8 recipe must see it, not skip it); n == 0 gives 0. `x` and `amax_out` are device
// pointers; `x` must be aligned to its element size.
void abs_max(const void* x, DType dtype, std::size_t n, float* amax_out, cudaStream_t stream);

}  // namespace tewb::kernels

#pragma once

#include <cstddef>

#include "tewb_kernels/dtype.h"

namespace tewb::kernels::host {

// abs_max (tewb_kernels/amax.h) over host memory: amax_out[0] = max |x[i]| as float32, a NaN anywhere
// makes it NaN (the kernel's order on the bits of |x|: any NaN ranks above inf; the NaN written is the
// largest |x| bit pattern, as the kernel's atomicMax leaves it), n == 0 gives 0. Exact: a max does not
// depend on order. One launch counted when n > 0, none for n == 0 (the GPU only clears amax_out then).
void abs_max(const void* x, DType dtype, std::size_t n, float* amax_out);

}  // namespace tewb::kernels::host

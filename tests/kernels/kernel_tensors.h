#pragma once

// Kernel tensors (tewb_kernels/tensor.h) for the kernel suites, built in one line.
#include <cstddef>

#include "tewb_kernels/tensor.h"

namespace tewb::test {

// x as a vector of n elements with its amax at `amax` (abs_max's argument).
inline kernels::Tensor with_amax(const void* x, kernels::DType dtype, std::size_t n, float* amax) {
    kernels::Tensor t = kernels::input(x, dtype, 1, n);
    t.amax = amax;
    return t;
}

}  // namespace tewb::test

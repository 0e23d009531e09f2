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

// A tensor [rows, cols] of `dtype` at `data`.
inline kernels::Tensor tensor(const void* data, kernels::DType dtype, std::size_t rows, std::size_t cols) {
    return kernels::input(data, dtype, rows, cols);
}

// An FP8 output [rows, cols] of `type` at `data`, with its scale, and its amax and transposed copy when given.
inline kernels::Tensor fp8_tensor(void* data, std::size_t rows, std::size_t cols, const float* scale, float* amax = nullptr,
                                  void* transposed = nullptr, kernels::Fp8Type type = kernels::Fp8Type::E4M3) {
    kernels::Tensor t = kernels::input(data, kernels::fp8_dtype(type), rows, cols);
    t.scale = const_cast<float*>(scale);
    t.amax = amax;
    t.transposed = transposed;
    return t;
}

// A block cast's output [rows, cols] of `type` at `data` with its scale_invs in `mode`'s layout.
inline kernels::Tensor block_tensor(void* data, std::size_t rows, std::size_t cols, float* scale_inv, kernels::ScaleMode mode,
                                    kernels::Fp8Type type = kernels::Fp8Type::E4M3) {
    kernels::Tensor t = kernels::input(data, kernels::fp8_dtype(type), rows, cols);
    t.scale_inv = scale_inv;
    t.scale_mode = mode;
    return t;
}

}  // namespace tewb::test

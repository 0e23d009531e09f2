#pragma once

#include <cstddef>

#include "tewb_kernels/dtype.h"
#include "tewb_kernels/tensor.h"

namespace tewb::kernels {

// A tensor as an entry point takes it: where its elements are, their type and its row-major shape
// [rows, cols] (a vector of n elements is [1, n]). One argument per tensor instead of a pointer, a dtype and
// dimensions spread over the list, as Transformer Engine's C API hands over an NVTETensor. A tensor whose
// data may be null ("not wanted") says so in the entry point's comment; its dtype and shape are then not
// looked at. FP8 outputs, which also carry a scale and an amax, are Fp8Output (fp8_output.h).
struct ConstTensorRef {
    const void* data = nullptr;
    DType dtype = DType::Float32;
    std::size_t rows = 0;
    std::size_t cols = 0;
};

// A tensor the call writes.
struct TensorRef {
    void* data = nullptr;
    DType dtype = DType::Float32;
    std::size_t rows = 0;
    std::size_t cols = 0;

    operator ConstTensorRef() const { return {data, dtype, rows, cols}; }
};

}  // namespace tewb::kernels

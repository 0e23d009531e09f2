#pragma once

// Where element (r, c) of a cast's input x [rows, cols] is: a dense matrix, or the columns of x kept as parts side by
// side (the stacked casts, tewb_kernels/cast.h: the attention's dq, dk and dv read as the qkv projection's one output
// gradient). The cast kernels take either as a template parameter, so the dense path is the code it was. Plain C++:
// the host twins include it too.
#include <cstddef>

#include "tewb_kernels/host_device.h"

namespace tewb::kernels::detail {

inline constexpr std::size_t kMaxStackedParts = 3;

template <typename T>
struct DenseRows {
    using Element = T;
    const T* x = nullptr;
    std::size_t cols = 0;
    TEWB_HOST_DEVICE const T* at(int r, int c) const { return x + static_cast<std::size_t>(r) * cols + c; }
};

// x's columns [p · part_cols, (p + 1) · part_cols) are part p's, its rows stride[p] elements apart.
template <typename T>
struct StackedRows {
    using Element = T;
    const T* part[kMaxStackedParts] = {};
    std::size_t stride[kMaxStackedParts] = {};
    int part_cols = 1;
    TEWB_HOST_DEVICE const T* at(int r, int c) const {
        const int p = c / part_cols;
        return part[p] + static_cast<std::size_t>(r) * stride[p] + (c - p * part_cols);
    }
};

}  // namespace tewb::kernels::detail

#pragma once

#include <cstddef>
#include <string_view>

#include <cuda_runtime_api.h>

#include "tewb_kernels/dtype.h"

namespace tewb::kernels::detail {

// The second stage of a two-stage column sum (a bias gradient): out[c] = the sum over k of
// partial[k * cols + c], k in order (so the result does not depend on scheduling), float32 math, stored in
// out_dtype. `call` names the public entry point in errors. Only for grids with more column tiles than the
// arrival counters hold (column_sum_rule.h); the others finish the same sums, in the same order, in their
// own launch (column_sum.cuh).
void launch_column_sum(const float* partial, int chunks, std::size_t cols, void* out, DType out_dtype, cudaStream_t stream,
                       std::string_view call);

}  // namespace tewb::kernels::detail

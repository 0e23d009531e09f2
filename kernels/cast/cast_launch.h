#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include <vector>

#include "tewb_kernels/cast.h"
#include "tewb_kernels/cast_multi_types.h"

namespace tewb::kernels::detail {

// Arguments already checked by the entry points in cast_api.cpp.
void launch_cast(const void* x, DType dtype, std::size_t n, const float* scale, void* out, Fp8Type type, float* amax,
                 cudaStream_t stream);
void launch_cast_transpose(const void* x, DType dtype, std::size_t rows, std::size_t cols, const float* scale, void* out,
                           void* out_t, Fp8Type type, float* amax, cudaStream_t stream);
// Rows of partial column sums cast_transpose_dbias writes (its workspace holds chunks * cols floats).
int cast_transpose_dbias_chunks(std::size_t rows);
void launch_cast_transpose_dbias(const ConstTensorRef& x, const Fp8Output& out, const TensorRef& dbias,
                                 const Workspace& workspace, cudaStream_t stream);
void launch_cast_dbias(const ConstTensorRef& x, const TensorRef& out, const TensorRef& dbias, const Workspace& workspace,
                       cudaStream_t stream);
void launch_block_cast(const void* x, DType dtype, std::size_t rows, std::size_t cols, int block_rows, bool power_of_two,
                       const BlockCastOutput& out, cudaStream_t stream);
// The multi-tensor block cast's checked items (cast_multi_arguments.h), all of `dtype`.
void launch_block_cast_multi(const std::vector<BlockCastItem>& work, DType dtype, int block_rows, bool power_of_two,
                             cudaStream_t stream);
void launch_transpose(const void* x, std::size_t element_bytes, std::size_t rows, std::size_t cols, void* out,
                      cudaStream_t stream);

}  // namespace tewb::kernels::detail

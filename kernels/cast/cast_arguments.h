#pragma once

#include <cstddef>

#include "tewb_kernels/block_cast_types.h"
#include "tewb_kernels/dtype.h"
#include "tewb_kernels/fp8_output.h"
#include "tewb_kernels/fp8_type.h"
#include "tewb_kernels/tensor_ref.h"

// The cast entry points' argument rules, one copy for the kernels (cast_api.cpp) and the host
// implementations (cast_host.cpp). Each fails with KernelError "<call>: <what>"; a call with nothing to do
// (n, rows or cols 0) passes after the checks that do not depend on the data, and the caller returns.
namespace tewb::kernels::detail {

void check_cast_arguments(const char* call, const void* x, DType dtype, std::size_t n, const float* scale, const void* out,
                          Fp8Type out_type, const float* amax);
void check_cast_transpose_arguments(const char* call, const void* x, DType dtype, std::size_t rows, std::size_t cols,
                                    const float* scale, const void* out, const void* out_t, Fp8Type out_type, const float* amax);
// `needed_workspace_bytes`: what cast_transpose_dbias_workspace_bytes returns for this shape.
void check_cast_transpose_dbias_arguments(const char* call, const ConstTensorRef& x, const Fp8Output& out, const TensorRef& dbias,
                                          const Workspace& workspace, std::size_t needed_workspace_bytes);
// out.data null: the column sums alone (out's dtype and shape are not looked at).
void check_cast_dbias_arguments(const char* call, const ConstTensorRef& x, const TensorRef& out, const TensorRef& dbias,
                                const Workspace& workspace);
// cast_dbias_workspace_bytes, device and host: chunks(rows) partial rows of cols floats (cast_dbias_geometry.h).
std::size_t cast_dbias_workspace(std::size_t rows, std::size_t cols);
void check_transpose_arguments(const char* call, const void* x, std::size_t element_bytes, std::size_t rows, std::size_t cols,
                               const void* out);
void check_block_cast_arguments(const char* call, const void* x, DType dtype, std::size_t rows, std::size_t cols, int block_rows,
                                const BlockCastOutput& out);
// block_cast_dbias_workspace_bytes, device and host: max(1, ceil(rows / 128)) partial rows of cols floats.
std::size_t block_cast_dbias_workspace(std::size_t rows, std::size_t cols);

}  // namespace tewb::kernels::detail

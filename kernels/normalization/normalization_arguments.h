#pragma once

#include <cstddef>

#include "tewb_kernels/dtype.h"
#include "tewb_kernels/fp8_output.h"

// LayerNorm's argument rules, one copy for the kernels (normalization_api.cpp) and the host implementation
// (normalization_host.cpp). Each fails with KernelError "<call>: <what>" and returns whether there is work
// (rows > 0): an empty call is refused or accepted the same way on both paths.
namespace tewb::kernels::detail {

bool check_layer_norm_forward_arguments(const char* call, const void* x, DType x_dtype, const void* gamma, const void* beta,
                                        DType param_dtype, std::size_t rows, std::size_t hidden, float eps, const void* out,
                                        DType out_dtype, const Fp8Output* fp8, const float* mean, const float* rstd);

// needed_workspace: what the path's own layer_norm_backward_workspace_bytes returns for rows and hidden.
bool check_layer_norm_backward_arguments(const char* call, const void* dy, DType dy_dtype, const void* x, DType x_dtype,
                                         const float* mean, const float* rstd, const void* gamma, DType param_dtype,
                                         std::size_t rows, std::size_t hidden, const void* dx, const void* dgamma,
                                         const void* dbeta, const void* workspace, std::size_t workspace_bytes,
                                         std::size_t needed_workspace);
// layer_norm_backward_add's dresidual: null (nothing to add) or a buffer aligned to x's element size.
void check_dresidual(const char* call, const void* dresidual, DType x_dtype);

}  // namespace tewb::kernels::detail

#pragma once

#include <cstddef>

#include "tewb_kernels/dtype.h"
#include "tewb_kernels/fp8_output.h"
#include "tewb_kernels/tensor_ref.h"

// GELU's argument rules, one copy for the kernels (activation_api.cpp) and the host implementation
// (activation_host.cpp). Each fails with KernelError "<call>: <what>" and returns whether there is work
// (rows and cols above 0).
namespace tewb::kernels::detail {

bool check_gelu_forward_arguments(const char* call, const void* x, DType x_dtype, std::size_t rows, std::size_t cols,
                                  const void* out, DType out_dtype, const Fp8Output* fp8);

// One gelu_backward call's arguments as the entry points take them (tewb_kernels/activation.h); x gives
// [rows, cols] and the dtype of dy and dx.
struct GeluBackwardCall {
    ConstTensorRef dy;
    ConstTensorRef x;
    TensorRef dx;  // data null: not wanted
    const Fp8Output* fp8 = nullptr;
    TensorRef dbias;  // data null: not wanted
    Workspace workspace;
};

// needed_workspace: what the path's own gelu_backward_workspace_bytes returns for rows and cols.
bool check_gelu_backward_arguments(const char* call, const GeluBackwardCall& a, std::size_t needed_workspace);

}  // namespace tewb::kernels::detail

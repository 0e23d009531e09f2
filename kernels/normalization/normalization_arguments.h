#pragma once

#include <cstddef>

#include "tewb_kernels/dtype.h"
#include "tewb_kernels/fp8_output.h"
#include "tewb_kernels/tensor_ref.h"

// LayerNorm's argument rules, one copy for the kernels (normalization_api.cpp) and the host implementation
// (normalization_host.cpp). Each fails with KernelError "<call>: <what>" and returns whether there is work
// (rows > 0): an empty call is refused or accepted the same way on both paths.
namespace tewb::kernels::detail {

// One call's arguments as the entry points take them (tewb_kernels/normalization.h); x gives [rows, hidden].
struct LayerNormForwardCall {
    ConstTensorRef x;
    ConstTensorRef gamma;
    ConstTensorRef beta;
    float eps = 0.0f;
    TensorRef out;  // data null: no high-precision output
    const Fp8Output* fp8 = nullptr;
    float* mean = nullptr;
    float* rstd = nullptr;
};

struct LayerNormBackwardCall {
    ConstTensorRef dy;
    ConstTensorRef x;
    const float* mean = nullptr;
    const float* rstd = nullptr;
    ConstTensorRef gamma;
    TensorRef dx;
    ConstTensorRef dresidual;  // data null: nothing added to dx
    TensorRef dgamma;
    TensorRef dbeta;
    Workspace workspace;
};

bool check_layer_norm_forward_arguments(const char* call, const LayerNormForwardCall& a);

// needed_workspace: what the path's own layer_norm_backward_workspace_bytes returns for rows and hidden.
bool check_layer_norm_backward_arguments(const char* call, const LayerNormBackwardCall& a, std::size_t needed_workspace);
// layer_norm_backward_add's dresidual: null (nothing to add) or a buffer of x's dtype and shape, aligned to its
// element size.
void check_dresidual(const char* call, const LayerNormBackwardCall& a);

// RMSNorm's calls (tewb_kernels/normalization.h's rms_norm_*).
struct RmsNormForwardCall {
    ConstTensorRef x;
    ConstTensorRef gamma;
    float eps = 0.0f;
    TensorRef out;  // data null: no high-precision output
    const Fp8Output* fp8 = nullptr;
    float* rstd = nullptr;
};

struct RmsNormBackwardCall {
    ConstTensorRef dy;
    ConstTensorRef x;
    const float* rstd = nullptr;
    ConstTensorRef gamma;
    TensorRef dx;
    ConstTensorRef dresidual;  // data null: nothing added to dx
    TensorRef dgamma;
    Workspace workspace;
};

bool check_rms_norm_forward_arguments(const char* call, const RmsNormForwardCall& a);
// Checks dresidual too (null: accepted); needed_workspace as for LayerNorm.
bool check_rms_norm_backward_arguments(const char* call, const RmsNormBackwardCall& a, std::size_t needed_workspace);

}  // namespace tewb::kernels::detail

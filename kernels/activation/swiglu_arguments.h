#pragma once

#include <cstddef>

#include "tewb_kernels/fp8_output.h"
#include "tewb_kernels/tensor_ref.h"

// SwiGLU's argument rules, one copy for the kernels (swiglu_api.cpp) and the host implementation
// (swiglu_host.cpp). Each fails with KernelError "<call>: <what>" and returns whether there is work (rows and
// cols above 0; cols = in.cols / 2, the width of one half).
namespace tewb::kernels::detail {

bool check_swiglu_forward_arguments(const char* call, const ConstTensorRef& in, const TensorRef& out, const Fp8Output* fp8);

// One swiglu_backward call's arguments as the entry points take them (tewb_kernels/activation.h).
struct SwigluBackwardCall {
    ConstTensorRef dy;
    ConstTensorRef in;
    TensorRef din;  // data null: not wanted
    const Fp8Output* fp8 = nullptr;
};

bool check_swiglu_backward_arguments(const char* call, const SwigluBackwardCall& a);

}  // namespace tewb::kernels::detail

#pragma once

#include "tewb_kernels/rotary_types.h"
#include "tewb_kernels/tensor_ref.h"

// The rotary embeddings' argument rules, one copy for the kernel (rotary_api.cpp) and the host implementation
// (rotary_host.cpp). Each fails with KernelError "<call>: <what>".
namespace tewb::kernels::detail {

// One rotary call's arguments as the entry points take them (tewb_kernels/rotary.h).
struct RotaryCall {
    ConstTensorRef x;
    ConstTensorRef cos;
    ConstTensorRef sin;
    RotaryHeads heads;
    TensorRef y;
};

// Whether there is work (x has rows and columns).
bool check_rotary_arguments(const char* call, const RotaryCall& a);

}  // namespace tewb::kernels::detail

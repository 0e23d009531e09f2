#include "activation/swiglu_arguments.h"
#include "activation/swiglu_launch.h"
#include "tewb_kernels/activation.h"

namespace tewb::kernels {

void swiglu_forward(const ConstTensorRef& in, const TensorRef& out, const Fp8Output* fp8, cudaStream_t stream) {
    if (!detail::check_swiglu_forward_arguments("tewb::kernels::swiglu_forward", in, out, fp8)) return;
    detail::launch_swiglu_forward(in, out, fp8, stream);
}

void swiglu_backward(const ConstTensorRef& dy, const ConstTensorRef& in, const TensorRef& din, const Fp8Output* fp8,
                     cudaStream_t stream) {
    const detail::SwigluBackwardCall call{dy, in, din, fp8};
    if (!detail::check_swiglu_backward_arguments("tewb::kernels::swiglu_backward", call)) return;
    detail::launch_swiglu_backward(call, stream);
}

}  // namespace tewb::kernels

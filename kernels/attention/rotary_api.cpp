#include "attention/rotary_arguments.h"
#include "attention/rotary_launch.h"
#include "tewb_kernels/rotary.h"

namespace tewb::kernels {

void rotary(const ConstTensorRef& x, const ConstTensorRef& cos, const ConstTensorRef& sin, const RotaryHeads& heads,
            const TensorRef& y, cudaStream_t stream) {
    const detail::RotaryCall call{x, cos, sin, heads, y};
    if (!detail::check_rotary_arguments("tewb::kernels::rotary", call)) return;
    detail::launch_rotary(call, stream);
}

}  // namespace tewb::kernels

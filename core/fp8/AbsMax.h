#pragma once

#include <ATen/core/Tensor.h>

namespace tewb {

// max |x| as a float32 scalar tensor on x's device: the amax an FP8 cast records. A NaN in x gives NaN.
// On CUDA tensors (float32, bfloat16, float16) it runs the kernels library's reduction on the current
// stream; elsewhere LibTorch ops, which are also the reference the GPU test compares against.
at::Tensor abs_max(const at::Tensor& x);
at::Tensor abs_max_reference(const at::Tensor& x);

}  // namespace tewb

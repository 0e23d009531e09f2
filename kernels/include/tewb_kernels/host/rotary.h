#pragma once

#include "tewb_kernels/rotary_types.h"
#include "tewb_kernels/tensor_ref.h"

// The rotary embeddings (tewb_kernels/rotary.h) over host memory: the same arguments, checks and semantics,
// minus the stream. Errors name "tewb::kernels::host::rotary". One launch counted per call with rows (as the
// CUDA path), none without.
//
// Exactness. rotary.cu's float32 operations one for one (a product rounded, then one fused multiply-add,
// std::fma for __fmaf_rn; the host library is built without contraction): bit for bit the CUDA kernel's
// result by construction (not measured: it has not run on a GPU), except a float32 NaN's payload (the GPU's
// arithmetic returns the canonical NaN, x86 keeps the input's; bfloat16 stores agree). Against the rotation in double precision
// (tst_host_rotary) each output is within 2^-23 · (|x_i · c| + 2 · |x_{i+half} · s|) + 2^-148 (one rounding of
// the product, one of the fma, twice over; the last term for subnormal products); bfloat16 stores add half a
// bfloat16 ulp; copied heads are their input's bits.
namespace tewb::kernels::host {

void rotary(const ConstTensorRef& x, const ConstTensorRef& cos, const ConstTensorRef& sin, const RotaryHeads& heads,
            const TensorRef& y);

}  // namespace tewb::kernels::host

#pragma once

#include <cstddef>

#include "tewb_kernels/dtype.h"
#include "tewb_kernels/fp8_output.h"
#include "tewb_kernels/tensor_ref.h"

// GELU (tewb_kernels/activation.h) over host memory: the same arguments, checks and semantics, minus the
// stream. Errors name "tewb::kernels::host::<function>". Each call counts the launches the CUDA path makes for
// the same arguments (launch_count.h).
//
// Exactness. The kernel's float32 expressions, term for term, with the host's tanhf for CUDA's (both within
// 2 ulp) and no fused multiply-adds (nvcc fuses some): not bit for bit the GPU's result. Against the tanh
// form in double precision (tst_host_normalization: every bfloat16 value and 20000 float32 samples; measured
// worst about a third of each bound):
//   forward |y - exact| <= 2^-22 * (|x| + |y|) + 2^-126;
//   backward |dx - exact| <= 2^-22 * |dy| * (1 + |x| * (1 + 0.134 * x^2)) + 2^-126 (the derivative's
//   1 - tanh^2 cancels for large |x|).
// The formula's own edges, as on the GPU: gelu(-inf) is NaN (0.5 * -inf * 0), and dx is NaN where
// 3 * 0.044715 * x^2 overflows float32 (|x| above about 5e19: 0 * inf). The CUDA kernel is expected within
// the same bounds (not measured here: no GPU), so host and GPU should agree to about twice them. bfloat16
// stores add up to half a bfloat16 ulp. dbias sums the float32 dx values (before dx's rounding) in the
// kernel's order: chunks of ceil(rows / chunks) rows, chunks = min(max(ceil(rows / 32), 1), 1024), each in
// row order, then the chunks in order from 0; bit for bit that order over the host's own dx. The FP8 output
// is float_to_fp8 of the float32 result times scale[0] (before the high-precision store's rounding, as the
// kernel), amax the largest |result| combined into fp8->amax as the kernel's atomicMax on the bits (larger
// kept, NaN wins).
namespace tewb::kernels::host {

// One launch (with fp8->transposed, a tiled kernel writes the transposed copy in the same pass).
void gelu_forward(const void* x, DType x_dtype, std::size_t rows, std::size_t cols, void* out, DType out_dtype,
                  const Fp8Output* fp8);

// The CUDA value: min(max(ceil(rows / 32), 1), 1024) * cols floats.
std::size_t gelu_backward_workspace_bytes(std::size_t rows, std::size_t cols);

// One launch: the transposed FP8 copy is written in the same pass, and with dbias the last block of each
// column tile sums the chunks (two launches where cols exceeds 2048 tiles of 256 columns,
// common/column_sum_rule.h: the chunk sums then take a launch of their own). The partial column sums are
// left in the workspace as the kernel leaves them.
void gelu_backward(const ConstTensorRef& dy, const ConstTensorRef& x, const TensorRef& dx, const Fp8Output* fp8,
                   const TensorRef& dbias, const Workspace& workspace);

// SwiGLU (tewb_kernels/activation.h) over host memory, the same arguments, checks and semantics minus the
// stream; one launch each (the transposed FP8 copy is written by the same tiled kernel on the GPU).
//
// Exactness. swiglu.cu's float32 expressions in its order, sigmoid(a) = 1 / (1 + expf(-a)), with the host's
// expf for CUDA's (within 2 ulp) and no fused multiply-adds (nvcc may fuse 1 + a * (1 - s)): not bit for bit
// the GPU's result; the CUDA kernels are expected within the same bounds (not measured: they have not run on
// a GPU). Against double precision (tst_host_activation: every finite bfloat16 gate, saturating gates and
// 20000 float32 samples; measured worst 0.42 of the forward's bound, 0.24 and 0.43 of the gradients'), with s
// the exact sigmoid(a):
//   forward |y - exact| <= 2^-21 * |a * s * u| + 2^-126 * (|a * u| + 1);
//   backward gate |d - exact| <= 2^-20 * |dy * u| * s * (1 + |a|) + 2^-126 * (|dy * u| * (1 + |a|) + 1),
//            up   |d - exact| <= 2^-21 * |dy * a * s| + 2^-126 * (|dy * a| + 1)
// (the 2^-126 terms: sigmoid(a) is subnormal or 0 below a of about -87). The formula's own edges, as on the
// GPU: silu(-inf) and the gate's derivative at +-inf are NaN (inf * 0); products that overflow float32 give
// inf. bfloat16 stores add up to half a bfloat16 ulp. The FP8 output is float_to_fp8 of the float32 result
// times scale[0] (before the high-precision store's rounding, as the kernel), amax the largest |result|
// combined into fp8->amax as the kernel's atomicMax on the bits (larger kept, NaN wins).
void swiglu_forward(const ConstTensorRef& in, const TensorRef& out, const Fp8Output* fp8);

void swiglu_backward(const ConstTensorRef& dy, const ConstTensorRef& in, const TensorRef& din, const Fp8Output* fp8);

}  // namespace tewb::kernels::host

#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "tewb_kernels/dtype.h"
#include "tewb_kernels/fp8_output.h"
#include "tewb_kernels/tensor_ref.h"

namespace tewb::kernels {

// GELU in its tanh form, float32 math: y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), over x
// [rows, cols] (float32 or bfloat16). Writes y to `out` (out_dtype) when not null and its FP8 form when
// fp8 is not null (at least one). Device pointers; an empty x does nothing.
void gelu_forward(const void* x, DType x_dtype, std::size_t rows, std::size_t cols, void* out, DType out_dtype,
                  const Fp8Output* fp8, cudaStream_t stream);

// Scratch for the backward's dbias partial column sums (per row chunk; added up in the same launch).
std::size_t gelu_backward_workspace_bytes(std::size_t rows, std::size_t cols);

// The MLP backward between its two GEMMs, in one pass over dy and x ([rows, cols], float32 or bfloat16, one
// dtype): dx = dy * gelu'(x) (x = the GELU's input), written to `dx` (x's dtype and shape) when dx.data is not
// null and as FP8 (with its transposed copy, for the next GEMM's dgrad and wgrad) when fp8 is not null;
// dbias ([1, cols], float32 or bfloat16) = the column sums of dx when dbias.data is not null, which needs the
// workspace.
void gelu_backward(const ConstTensorRef& dy, const ConstTensorRef& x, const TensorRef& dx, const Fp8Output* fp8,
                   const TensorRef& dbias, const Workspace& workspace, cudaStream_t stream);

}  // namespace tewb::kernels

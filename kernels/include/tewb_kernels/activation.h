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

// SwiGLU, Llama's MLP activation, float32 math: in [rows, 2 * cols] (float32 or bfloat16) holds fc1's output
// as its two halves side by side, per row the gate a (columns 0 .. cols - 1) then the up projection u
// (columns cols .. 2 * cols - 1), the order of Transformer Engine's swiglu; y [rows, cols] = silu(a) * u with
// silu(a) = a * sigmoid(a), sigmoid(a) = 1 / (1 + exp(-a)). Writes y to `out` (its dtype, [rows, cols]) when
// out.data is not null and as FP8 (the down projection's input; with its transposed copy when
// fp8->transposed is set) when fp8 is not null (at least one). Device pointers; an empty in does nothing.
void swiglu_forward(const ConstTensorRef& in, const TensorRef& out, const Fp8Output* fp8, cudaStream_t stream);

// SwiGLU's backward in one pass over dy [rows, cols] and in [rows, 2 * cols] (one dtype, float32 or
// bfloat16): din's gate half = dy * u * sigmoid(a) * (1 + a * (1 - sigmoid(a))), its up half = dy * silu(a),
// written to `din` (in's dtype and shape) when din.data is not null and as FP8 [rows, 2 * cols] (with its
// transposed copy [2 * cols, rows] when fp8->transposed is set: fc1's dgrad and wgrad operands) when fp8 is
// not null (at least one). No bias (Llama's projections have none).
void swiglu_backward(const ConstTensorRef& dy, const ConstTensorRef& in, const TensorRef& din, const Fp8Output* fp8,
                     cudaStream_t stream);

}  // namespace tewb::kernels

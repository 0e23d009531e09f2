#pragma once

#include <cstddef>

#include "tewb_kernels/amax.h"
#include "tewb_kernels/entry_points.h"
#include "tewb_kernels/tensor.h"

// The activations and their backward passes. An FP8 output `fp8` (data null: not wanted) is E4M3 or E5M2 of the
// output's shape: fp8(y · fp8.scale[0]), max |y| combined into fp8.amax[0] when set, and the transposed copy when
// fp8.transposed is set (the next GEMM's operands).
//
// Exactness of the host twins. GELU's follow the kernel's float32 expressions term for term, with the host's
// tanhf for CUDA's (both within 2 ulp) and no fused multiply-adds (nvcc fuses some): not bit for bit the GPU's result. Against the tanh
// form in double precision (tst_host_normalization: every bfloat16 value and 20000 float32 samples; measured
// worst about a third of each bound):
//   forward |y - exact| <= 2^-22 * (|x| + |y|) + 2^-126;
//   backward |dx - exact| <= 2^-22 * |dy| * (1 + |x| * (1 + 0.134 * x^2)) + 2^-126 (the derivative's
//   1 - tanh^2 cancels for large |x|).
// The formula's own edges, as on the GPU: gelu(-inf) is NaN (0.5 * -inf * 0), and dx is NaN where
// 3 * 0.044715 * x^2 overflows float32 (|x| above about 5e19: 0 * inf). The CUDA kernel is expected within
// the same bounds (not measured here: no GPU), so host and GPU should agree to about twice them. bfloat16
// stores add up to half a bfloat16 ulp. dbias sums the float32 dx values (before dx's rounding) in the
// kernel's order: chunks of p rows (the last one shorter), p = ceil(rows / min(max(ceil(rows / 32), 1), 1024))
// rounded up to a multiple of 8, as many chunks as have rows, each in row order, then the chunks in order from 0; bit for bit that order over the host's own dx. The FP8 output
// is float_to_fp8 of the float32 result times scale[0] (before the high-precision store's rounding, as the
// kernel), amax the largest |result| combined into fp8.amax as the kernel's atomicMax on the bits (larger
// kept, NaN wins).
// Launches, on both: GELU forward one (with fp8.transposed, a tiled kernel writes the transposed copy in the same pass).
// GELU backward one: the transposed FP8 copy is written in the same pass (a tiled kernel, 64 columns by 32 rows
// through shared memory), and with dbias the last block of each column tile sums the chunks (two launches where cols
// exceeds 2048 tiles of 256 columns, of 64 with the transposed copy, common/column_sum_rule.h: the chunk sums then
// take a launch of their own). The partial column sums are left in
// the workspace as the kernel leaves them. SwiGLU: one launch each (the transposed FP8 copy is written by the same
// tiled kernel).
// SwiGLU's twins follow swiglu.cu's float32 expressions in their order, sigmoid(a) = 1 / (1 + expf(-a)), with the host's
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
// combined into fp8.amax as the kernel's atomicMax on the bits (larger kept, NaN wins).
TEWB_ENTRY_POINTS(
// GELU in its tanh form, float32 math: y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), over x
// [rows, cols] (float32 or bfloat16). Writes y to `out` (its dtype, x's shape) when out.data is set and its FP8 form
// when fp8.data is set (at least one). Device pointers; an empty x does nothing.
void gelu_forward(const Tensor& x, const Tensor& out, const Tensor& fp8, Stream stream);

// The MLP backward between its two GEMMs, in one pass over dy and x ([rows, cols], float32 or bfloat16, one
// dtype): dx = dy * gelu'(x) (x = the GELU's input), written to `dx` (x's dtype and shape) when dx.data is not
// null and as FP8 (with its transposed copy, for the next GEMM's dgrad and wgrad) when fp8.data is set;
// dbias ([1, cols], float32 or bfloat16) = the column sums of dx when dbias.data is not null, which needs the
// workspace.
void gelu_backward(const Tensor& dy, const Tensor& x, const Tensor& dx, const Tensor& fp8, const Tensor& dbias,
                   const Workspace& workspace, Stream stream);

// The two above whose output goes to an FP8 cast under current scaling (the amax hand-off, as normalization.h's
// layer_norm_forward_current_scale): out (forward) or dx (backward) required, no FP8 output, and from max |output as
// stored| the scale, scale_inv and staging entry abs_max_current_scale(output, target...) writes, bit for bit, by the
// launch's last block. The target's floats must not lie in the call's tensors or workspace; no elements: the scale of amax
// 0 (abs_max_current_scale's launch). One stream, as abs_max.
void gelu_forward_current_scale(const Tensor& x, const Tensor& out, const CurrentScaleTarget& target, Stream stream);
void gelu_backward_current_scale(const Tensor& dy, const Tensor& x, const Tensor& dx, const CurrentScaleTarget& target,
                                 const Tensor& dbias, const Workspace& workspace, Stream stream);

// SwiGLU, Llama's MLP activation, float32 math: in [rows, 2 * cols] (float32 or bfloat16) holds fc1's output
// as its two halves side by side, per row the gate a (columns 0 .. cols - 1) then the up projection u
// (columns cols .. 2 * cols - 1), the order of Transformer Engine's swiglu; y [rows, cols] = silu(a) * u with
// silu(a) = a * sigmoid(a), sigmoid(a) = 1 / (1 + exp(-a)). Writes y to `out` (its dtype, [rows, cols]) when
// out.data is not null and as FP8 (the down projection's input; with its transposed copy when
// fp8.transposed is set) when fp8.data is set (at least one). Device pointers; an empty in does nothing.
void swiglu_forward(const Tensor& in, const Tensor& out, const Tensor& fp8, Stream stream);

// SwiGLU's backward in one pass over dy [rows, cols] and in [rows, 2 * cols] (one dtype, float32 or
// bfloat16): din's gate half = dy * u * sigmoid(a) * (1 + a * (1 - sigmoid(a))), its up half = dy * silu(a),
// written to `din` (in's dtype and shape) when din.data is not null and as FP8 [rows, 2 * cols] (with its
// transposed copy [2 * cols, rows] when fp8.transposed is set: fc1's dgrad and wgrad operands) when fp8.data is
// set (at least one). No bias (Llama's projections have none).
void swiglu_backward(const Tensor& dy, const Tensor& in, const Tensor& din, const Tensor& fp8, Stream stream);

// swiglu_forward and swiglu_backward with current scaling's scale of their output (out, din; required, no FP8 output),
// as gelu_forward_current_scale: the amax hand-off for the down projection's input and fc1's output gradient.
void swiglu_forward_current_scale(const Tensor& in, const Tensor& out, const CurrentScaleTarget& target, Stream stream);
void swiglu_backward_current_scale(const Tensor& dy, const Tensor& in, const Tensor& din, const CurrentScaleTarget& target,
                                   Stream stream);
)

namespace tewb::kernels {

// Scratch for the backward's dbias partial column sums (per row chunk; added up in the same launch).
std::size_t gelu_backward_workspace_bytes(std::size_t rows, std::size_t cols);

}  // namespace tewb::kernels

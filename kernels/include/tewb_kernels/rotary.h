#pragma once

#include <cstddef>

#include "tewb_kernels/amax.h"
#include "tewb_kernels/entry_points.h"
#include "tewb_kernels/tensor.h"

namespace tewb::kernels {

// x and y are [batch, seq, heads, head_dim] row-major, handed over as the matrix [batch * seq, heads * head_dim]
// (the tensors' rows and cols): these say where the sequence and the heads split that matrix.
struct RotaryHeads {
    std::size_t seq = 0;            // positions per sequence: rows = batch * seq, row r at position r % seq
    std::size_t heads = 0;          // heads per position: cols = heads * head_dim, head_dim even
    std::size_t rotated_heads = 0;  // the first rotated_heads heads turn, the rest are copied (0 .. heads)
    bool inverse = false;           // turn by −θ (sin negated): the backward of the forward
};

}  // namespace tewb::kernels

TEWB_ENTRY_POINTS(
// Rotary position embeddings (RoFormer) in Llama's rotate-half layout, Transformer Engine's fused_rope: over x
// [batch, seq, heads, head_dim] (float32 or bfloat16, as the matrix [batch * seq, heads * head_dim], see
// RotaryHeads), with half = head_dim / 2, each of the first rotated_heads heads of the row at position p turns
// its pairs (i, i + half), i < half:
//   y_i        = x_i · cos[p, i] − x_{i+half} · sin[p, i]
//   y_{i+half} = x_{i+half} · cos[p, i] + x_i · sin[p, i]
// in float32 math with explicit fused multiply-adds (y_i = fma(x_i, c, −(x_{i+half} · s)), y_{i+half} =
// fma(x_{i+half}, c, x_i · s)), rounded once to x's dtype; sin is negated when heads.inverse (the backward:
// the transposed rotation). The other heads (a fused qkv's value heads) are copied bit for bit. cos and sin
// are float32 [seq_table, half] with seq_table >= seq (core/model/Rotary.h: rows past seq are not read).
// y has x's dtype and shape and may not overlap x, cos or sin. One launch: a thread takes 16 / sizeof(x)
// consecutive pairs of one head with 16-byte loads and stores where half is a multiple of that and x and y are
// 16-byte aligned, one pair elsewhere. Device pointers; no rows does nothing.
// The host twin: rotary.cu's float32 operations one for one (a product rounded, then one fused multiply-add,
// std::fma for __fmaf_rn; the host library is built without contraction): bit for bit the CUDA kernel's
// result by construction (not measured: it has not run on a GPU), except a float32 NaN's payload (the GPU's
// arithmetic returns the canonical NaN, x86 keeps the input's; bfloat16 stores agree). Against the rotation in double precision
// (tst_host_rotary) each output is within 2^-23 · (|x_i · c| + 2 · |x_{i+half} · s|) + 2^-148 (one rounding of
// the product, one of the fma, twice over; the last term for subnormal products); bfloat16 stores add half a
// bfloat16 ulp; copied heads are their input's bits.
void rotary(const Tensor& x, const Tensor& cos, const Tensor& sin, const RotaryHeads& heads, const Tensor& y, Stream stream);
// The amax hand-off (docs/kernels.md): the same launch, y bit for bit rotary's, and current scaling's scale of y from its
// largest |value| as stored (turned and copied heads alike), what abs_max_current_scale(y, target...) writes after rotary:
// the inverse rotation's output is llama's qkv output gradient, so its FP8 cast needs no amax pass of its own. The
// target's floats may not lie in x, cos, sin or y; no rows: the scale of amax 0.
void rotary_current_scale(const Tensor& x, const Tensor& cos, const Tensor& sin, const RotaryHeads& heads, const Tensor& y,
                          const CurrentScaleTarget& target, Stream stream);
// The same output cast for an FP8 Linear whose scale is known before the pass (delayed scaling: llama's qkv output
// gradient): y bit for bit rotary's, and fp8 ([rows, cols], E4M3 or E5M2, with fp8.transposed [cols, rows] and fp8.scale
// required; fp8.amax optional, max |y| as stored combined into it) gets y as stored cast as cast_transpose_to_fp8 casts it
// (the same bytes, transposed copy and amax). One launch where rotary_quantize_fits (rotary_call.h) holds — 64 x 64 tiles
// whose FP8 bytes are staged in shared memory for the transposed copy: rows a multiple of 8, half a multiple of 16 /
// sizeof(x), x and y 16-byte aligned, fp8 16 / sizeof(x)-byte and fp8.transposed 8-byte aligned, as the seed llama's
// [3072, 1280] bfloat16 gradient is —; elsewhere rotary's launch and then cast_transpose_to_fp8 over y. fp8's bytes,
// its transposed copy, scale and amax lie apart from each other and from x, cos, sin and y; no rows: nothing.
void rotary_quantize(const Tensor& x, const Tensor& cos, const Tensor& sin, const RotaryHeads& heads, const Tensor& y,
                     const Tensor& fp8, Stream stream);
)

#pragma once

#include <cuda_runtime_api.h>

#include "tewb_kernels/rotary_types.h"
#include "tewb_kernels/tensor_ref.h"

namespace tewb::kernels {

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
void rotary(const ConstTensorRef& x, const ConstTensorRef& cos, const ConstTensorRef& sin, const RotaryHeads& heads,
            const TensorRef& y, cudaStream_t stream);

}  // namespace tewb::kernels

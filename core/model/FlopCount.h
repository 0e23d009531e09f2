#pragma once

#include "core/model/ModelShape.h"

namespace tewb {

// Model FLOPs of one training step (forward + backward = 3 x forward), counting multiply-adds as 2:
//   gpt:   forward per token = layers * (24 h^2 + 4 s h) + 2 h V
//     24 h^2: QKV (6 h^2), output projection (2 h^2), MLP up and down (16 h^2)
//   llama: forward per token = layers * (2 h (heads + 2 kv) d + 2 h^2 + 6 h f + 4 s h) + 2 h V
//     with d = h / heads, kv the key/value heads (grouped-query attention's smaller K and V projections) and
//     f = ffn_hidden: SwiGLU's three matrices (gate and up, h -> 2 f; down, f -> h)
//   both:  4 s h: attention scores Q K^T and the weighted sum over V, full s x s (causal masking not discounted;
//          with grouped-query attention every query head still attends, so it is the same)
//          2 h V: the tied LM head
//   step = 3 * forward per token * batch * s
// Embedding lookups, normalization, activations, rotary embeddings, softmax and the optimizer are not counted
// (as in MFU practice).
double training_flops_per_step(const ModelShape& shape, int batch);

// The model's trainable parameters (tied LM head counted once):
//   gpt:   layers (12 h^2 + 13 h) + V h + s h + 2 h
//   llama: layers (h (heads + 2 kv) d + h^2 + 3 h f + 2 h) + V h + h   (no biases, no position table)
double model_parameters(const ModelShape& shape);

}  // namespace tewb

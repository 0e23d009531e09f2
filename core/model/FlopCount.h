#pragma once

#include "core/model/ModelShape.h"

namespace tewb {

// Model FLOPs of one training step (forward + backward = 3 x forward), counting multiply-adds as 2:
//   forward per token = layers * (24 h^2 + 4 s h) + 2 h V
//     24 h^2: QKV (6 h^2), output projection (2 h^2), MLP up and down (16 h^2)
//     4 s h:  attention scores Q K^T and the weighted sum over V, full s x s (causal masking not discounted)
//     2 h V:  the tied LM head
//   step = 3 * forward per token * batch * s
// Embedding lookups, LayerNorm, GELU, softmax and the optimizer are not counted (as in MFU practice).
double training_flops_per_step(const ModelShape& shape, int batch);

}  // namespace tewb

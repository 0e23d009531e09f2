#pragma once

#include <cstdint>

#include "core/model/ModelShape.h"

namespace tewb {

// The least bytes one transformer layer of MiniGPT can move in a training step: every tensor it must read
// is read once and every tensor it must write is written once, activations in bfloat16 as on a GPU
// (docs/kernels.md, "The least bytes a layer can move", derives it op by op). The speed issue's byte target is
// the ledger's bytes per layer at most 1.3 times forward + backward (the weight copies are made once per step
// for every layer together, outside the layers).
struct LayerBytes {
    double forward = 0;
    double backward = 0;
    double weight_copies = 0;  // float32 master weights to the GEMMs' copies (FP8: with transposed copies)
    double total() const { return forward + backward + weight_copies; }
};

// `tokens`: batch × seq of one step. `fp8`: te FP8 (FP8 GEMM inputs with transposed copies), else te BF16.
LayerBytes minimum_layer_bytes(const ModelShape& shape, std::int64_t tokens, bool fp8);

}  // namespace tewb

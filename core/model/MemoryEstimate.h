#pragma once

#include <cstdint>

#include "core/model/ModelShape.h"

namespace tewb {

// What one training step of a MiniGPT holds at its peak, estimated from the shape before anything is
// allocated, so a configuration that cannot fit is refused with numbers instead of being killed by the
// kernel a minute later. Deliberately generous (it is a bound to refuse on, not a forecast):
//   parameters  P = layers * (12 h^2 + 13 h) + V h + s h + 2 h   (tied LM head)
//   weights, gradients and AdamW's two moments: 16 bytes per parameter in float32, plus a 16-bit copy
//   of the weights when the step computes in BF16/FP8
//   activations saved for backward, per layer and token: 34 h + 5 heads s elements (Korthikanti et
//   al.'s count), at 4 bytes in float32 and 2 in BF16/FP8; logits and their gradient: 3 V per token
//   in float32.
struct MemoryEstimate {
    std::uint64_t parameters = 0;
    std::uint64_t state_bytes = 0;       // weights, gradients, optimizer moments
    std::uint64_t activation_bytes = 0;  // saved for backward, and the logits
    std::uint64_t total_bytes() const { return state_bytes + activation_bytes; }
};

MemoryEstimate estimate_training_memory(const ModelShape& shape, int batch, bool reduced_precision);

}  // namespace tewb

#pragma once

#include <cstdint>

#include "core/config/RunConfig.h"

namespace tewb {

// What one process training a resolved configuration holds at its peak, estimated before anything is
// allocated, so a configuration that cannot fit is refused with numbers instead of being killed by the
// kernel a minute later. With P parameters (model_parameters in core/model/FlopCount.h; a gpt's
// layers (12 h² + 13 h) + V h + s h + 2 h) and T = batch × seq tokens per step:
//
// On the CPU (the process's resident set): a fit of measured peaks (docs/reliability.md has the grid: every
// preset and shape within 1.0–1.5× of its measured peak), per backend and precision,
//   runtime   LibTorch's own memory before the model: 0.42 GB;
//   state     bytes per parameter: weights, gradients, AdamW's two moments, the step's temporaries, and the
//             BF16/FP8 copies where the run keeps them;
//   activations  bytes per layer, token and unit of hidden size (what autograd saves, the emulated FP8
//             GEMMs' float copies) and per layer, token, head and position (attention), plus the logits and
//             their gradients (bytes per token and vocabulary entry);
// then 1.25× the fit, so a shape the grid did not cover is still over its peak. The grid's shapes are gpts: a
// llama's per-layer activations are scaled by the elements its block saves relative to a gpt's (the rotated
// queries and keys, SwiGLU's three intermediate tensors, GQA's narrower K and V), not measured on their own.
//
// On a GPU (the CUDA allocator's peak, not yet compared with measurements): deliberately generous, 16 bytes
// per parameter in float32 (+2 for the 16-bit weights of a BF16/FP8 step), activations of 34 h + 5 heads s
// elements per layer and token at 4 bytes (2 in BF16/FP8), logits 3 V per token in float32.
struct MemoryEstimate {
    std::uint64_t parameters = 0;
    std::uint64_t runtime_bytes = 0;     // the process before the model (CPU only)
    std::uint64_t state_bytes = 0;       // weights, gradients, optimizer moments, copies
    std::uint64_t activation_bytes = 0;  // saved for backward, and the logits
    std::uint64_t total_bytes() const { return runtime_bytes + state_bytes + activation_bytes; }
};

// One process of `resolved` (device and precision no longer Auto): a data-parallel job's ranks each hold this.
MemoryEstimate estimate_training_memory(const RunConfig& resolved);

}  // namespace tewb

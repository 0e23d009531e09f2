#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

namespace tewb {

// The rotary position embeddings' angles (RoFormer; Llama's rotate-half layout): position p turns the pair
// (i, i + head_dim/2) of a query or key head by θ(p, i) = p · base^(−2i / head_dim). Both llama backends and
// the rotary kernels (kernels/attention) read these tables.
struct RotaryTables {
    at::Tensor cos;  // float32 [seq, head_dim / 2], on the CPU
    at::Tensor sin;  // float32 [seq, head_dim / 2], on the CPU
};

// The tables for positions 0 … seq − 1, computed in double and rounded once to float32 (so every backend and
// the plain PyTorch reference see the same values). Throws std::invalid_argument for seq < 1, an odd or
// non-positive head_dim, or base ≤ 1.
RotaryTables rotary_tables(std::int64_t seq, std::int64_t head_dim, double base);

}  // namespace tewb

#pragma once

#include <cstddef>

// How the rotary kernels (rotary.h, host/rotary.h) read their x and y; no CUDA here.
namespace tewb::kernels {

// x and y are [batch, seq, heads, head_dim] row-major, handed over as the matrix [batch * seq, heads * head_dim]
// (ConstTensorRef / TensorRef rows and cols): these say where the sequence and the heads split that matrix.
struct RotaryHeads {
    std::size_t seq = 0;            // positions per sequence: rows = batch * seq, row r at position r % seq
    std::size_t heads = 0;          // heads per position: cols = heads * head_dim, head_dim even
    std::size_t rotated_heads = 0;  // the first rotated_heads heads turn, the rest are copied (0 .. heads)
    bool inverse = false;           // turn by −θ (sin negated): the backward of the forward
};

}  // namespace tewb::kernels

#pragma once

// The cross-entropy kernels' shape, one rule for loss.cu and its host twin (loss_host.cpp follows the
// forward's summation order from it). Plain C++.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "common/alignment.h"
#include "tewb_kernels/dtype.h"

namespace tewb::kernels::detail {

// A block of 8 warps per row; a block takes rows b, b + blocks, ... (at most kCrossEntropyMaxBlocks blocks,
// so the last block adds at most that many partial sums).
inline constexpr std::size_t kCrossEntropyThreads = 256;
inline constexpr std::size_t kCrossEntropyWarps = kCrossEntropyThreads / 32;
inline constexpr std::size_t kCrossEntropyMaxBlocks = 1024;

constexpr std::size_t cross_entropy_blocks(std::size_t rows) {
    return std::clamp<std::size_t>(rows, 1, kCrossEntropyMaxBlocks);
}

// The forward's vector: 16 bytes (4 float32, 8 bfloat16 logits) where every row starts 16-byte aligned
// (logits aligned, vocab a multiple of the width), else single elements. Thread t of the block adds
// vectors t, t + 256, ... of its row in that order, so the width decides the float32 summation order.
inline std::size_t cross_entropy_forward_width(DType logits_dtype, std::size_t vocab, const void* logits) {
    const std::size_t width = 16 / element_size(logits_dtype);
    return aligned(logits, 16) && vocab % width == 0 ? width : 1;
}

}  // namespace tewb::kernels::detail

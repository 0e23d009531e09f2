#pragma once

// Which LayerNorm forward kernel runs, one rule for normalization.cu and its host twin (normalization_host.cpp
// orders its sums after the kernel this picks). Plain C++.
#include <cstddef>

namespace tewb::kernels::detail {

// The fast forward kernel writes the FP8 output's transposed copy from a shared-memory stage of at least
// 8 rows x hidden bytes (layer_norm_fast.cuh); longer rows take the plain kernel's banded form when the
// transposed copy is asked for (it stages 32 x 32 tiles, any hidden).
inline constexpr std::size_t kLayerNormFastTransposedMaxHidden = 4096;

// The fast kernel's shape rules (whole 16-byte vectors, aligned pointers, a row of at most 4 rounds of
// 8 warps) hold for x's dtype and hidden; does the transposed copy still let it run?
constexpr bool layer_norm_fast_allows_transposed(std::size_t hidden, bool transposed) {
    return !transposed || hidden <= kLayerNormFastTransposedMaxHidden;
}

}  // namespace tewb::kernels::detail

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

// The backward that also writes an FP8 Linear's gradient (layer_norm_backward_quantize_dbias) runs on the fast kernel
// in bands of rows whose FP8 bytes it stages for the transposed copy (beside its partial sums in shared memory where a
// block has several row groups, hidden <= 1024): for rows of at most this many elements, so that the stage of a band
// (and the sums) stay well inside the 48 KiB a launch gets without opting in.
inline constexpr std::size_t kLayerNormBackwardFp8MaxHidden = 2048;

// Its band: 32 rows where the grid keeps at least 264 bands (two blocks per SM of a 132-SM GPU) and the stage fits
// 24 KiB, else 16, else 8. The band decides which rows each block sums (so the order of dgamma's, dbeta's and the dx
// sums' float32 additions): the host twin follows it.
constexpr int layer_norm_backward_band_rows(std::size_t rows, std::size_t hidden) {
    const std::size_t pitch = (hidden + 15) / 16 * 16 + 4;  // staged_transpose_pitch
    for (const std::size_t band : {std::size_t{32}, std::size_t{16}}) {
        if (band * pitch <= 24 * 1024 && (rows + band - 1) / band >= 264) return static_cast<int>(band);
    }
    return 8;
}

}  // namespace tewb::kernels::detail

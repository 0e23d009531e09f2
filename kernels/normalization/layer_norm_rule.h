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

// Does the fast backward (layer_norm_fast.cuh's layer_norm_backward) load a thread's next row while it works on the
// current one? That holds x, dy and dresidual of VECS vectors of W floats twice, so only where the kernel keeps three
// or more blocks resident per SM (the grid's at most 256 blocks then all resident on a GPU of 86 or more SMs): blocks
// of 128 threads (at most 4 warps a row) and at most 12 floats of a tensor per thread. ptxas, sm_90, 2026-12-06
// (registers per thread without / with the prefetch; blocks per SM), LayerNorm without the cast: float32 rows
// 513..1024 (4 warps, VECS 2: the seed's float32 residual stream at hidden 768) 64 / 105 (8 / 4), with the cast
// 96 / 128 (5 / 4); float32 1025..1536 (VECS 3) 92 / 142 (5 / 3); bfloat16 rows of at most 256 (VECS 1) 72 / 110
// (7 / 4). Left out: bfloat16 hidden 768 (1 warp, VECS 3) 162 / 255; bfloat16 VECS 4 201 / 255 with 872 bytes
// spilled; float32 385..512 (1 warp, VECS 4) 116 / 178 (4 / 2); float32 2049..3072 (8 warps) 92 / 141, 2 blocks of 256
// threads / 1.
constexpr bool layer_norm_backward_prefetches(int vecs, int width, int warps) {
    return warps <= 4 && vecs * width <= 12;
}

// Does the fast forward with the FP8 transposed copy (layer_norm_forward_transposed) load a group's next row of its
// bands while it works on the current one? Where a thread holds at most 16 floats of a row (bfloat16 rows of 1 or 2
// vectors, float32 of up to 4): the prefetch adds them to registers the kernel keeps low (40 to 90, ptxas sm_90).
// Only the schedule changes: each row's arithmetic is the same.
constexpr bool layer_norm_forward_prefetches(int vecs, int width) {
    return vecs * width <= 16;
}

}  // namespace tewb::kernels::detail

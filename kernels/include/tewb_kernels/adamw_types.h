#pragma once

#include <cstddef>

#include "tewb_kernels/fp8_output.h"

// What the multi-tensor AdamW step (adamw.h, host/adamw.h) takes, and its launch rule; no CUDA here.
namespace tewb::kernels {

// One parameter tensor of an AdamW step: float32, contiguous, numel elements each. param_bf16: null, or
// numel bfloat16 values that receive the updated parameter rounded to nearest even (the parameter's
// bfloat16 copy the forward reads). fp8: fp8.data null, or the parameter's FP8 copies as the next forward's
// cast_transpose_multi_to_fp8 (cast_multi.h) would write them from the updated parameter as a [rows, cols]
// matrix (rows * cols == numel): fp8.data [rows, cols], fp8.transposed [cols, rows] when not null, max
// |param| combined into fp8.amax[0] when not null, with the scale fp8.scale[0]. A tensor with numel 0 is
// skipped and its pointers are not looked at.
struct AdamWTensor {
    float* param = nullptr;
    const float* grad = nullptr;
    float* exp_avg = nullptr;
    float* exp_avg_sq = nullptr;
    void* param_bf16 = nullptr;
    std::size_t numel = 0;
    // Brace-initialised, so that lists of the six fields above stay free of -Wmissing-field-initializers.
    Fp8Output fp8{};
    std::size_t rows = 0;  // the parameter as a [rows, cols] matrix when fp8.data is set
    std::size_t cols = 0;
};

// Tensors one launch takes at most: they travel in the kernel's parameters (100 bytes each with their FP8
// outputs, 25 KiB for 256: beyond the classic 4 KiB, so CUDA 12.1 or later, which takes up to 32764 bytes),
// so a 20-layer transformer's weights, biases and norms fit in one launch.
inline constexpr std::size_t kAdamWTensorsPerLaunch = 256;

// Elements one thread block updates (its chunk of a tensor without an FP8 output).
inline constexpr std::size_t kAdamWChunkElements = 16384;

// The tile one thread block updates of a tensor with an FP8 output: kAdamWFp8Tile x kAdamWFp8Tile elements
// of its [rows, cols] matrix (cast_transpose_multi_to_fp8's tile), so the transposed copy is written along
// its own rows from shared memory.
inline constexpr std::size_t kAdamWFp8Tile = 64;

// The most chunks (tiles) one tensor may have: a launch's stay within a grid's 2^31 - 1 blocks.
inline constexpr std::size_t kAdamWMaxChunks = std::size_t{2147483647} / kAdamWTensorsPerLaunch;

// The largest numel a tensor may have (kAdamWMaxChunks chunks); one with an FP8 output also has at most
// kAdamWMaxChunks tiles.
inline constexpr std::size_t kAdamWMaxNumel = kAdamWMaxChunks * kAdamWChunkElements;

// The launches of one step, the CUDA kernel's and (counted) the host twin's: one per kAdamWTensorsPerLaunch
// tensors that have elements, and one when none has (the step still advances). FP8 outputs do not change it.
constexpr std::size_t adamw_launches(std::size_t tensors_with_elements) {
    return tensors_with_elements == 0 ? 1 : (tensors_with_elements + kAdamWTensorsPerLaunch - 1) / kAdamWTensorsPerLaunch;
}

}  // namespace tewb::kernels

#pragma once

#include <cstddef>

// What the multi-tensor AdamW step (adamw.h, host/adamw.h) takes, and its launch rule; no CUDA here.
namespace tewb::kernels {

// One parameter tensor of an AdamW step: float32, contiguous, numel elements each. param_bf16: null, or
// numel bfloat16 values that receive the updated parameter rounded to nearest even (the parameter's
// bfloat16 copy the forward reads). A tensor with numel 0 is skipped and its pointers are not looked at.
struct AdamWTensor {
    float* param = nullptr;
    const float* grad = nullptr;
    float* exp_avg = nullptr;
    float* exp_avg_sq = nullptr;
    void* param_bf16 = nullptr;
    std::size_t numel = 0;
};

// Tensors one launch takes at most: they travel in the kernel's parameters (52 bytes each, about 26 KiB for
// 512: beyond the classic 4 KiB, so CUDA 12.1 or later, which takes up to 32764 bytes), so a 40-layer
// transformer's weights, biases and norms fit in one launch.
inline constexpr std::size_t kAdamWTensorsPerLaunch = 512;

// Elements one thread block updates (its chunk of a tensor).
inline constexpr std::size_t kAdamWChunkElements = 16384;

// The largest numel a tensor may have: a launch's chunks stay within a grid's 2^31 - 1 blocks.
inline constexpr std::size_t kAdamWMaxNumel = ((std::size_t{2147483647} / kAdamWTensorsPerLaunch) * kAdamWChunkElements);

// The launches of one step, the CUDA kernel's and (counted) the host twin's: one per kAdamWTensorsPerLaunch
// tensors that have elements, and one when none has (the step still advances).
constexpr std::size_t adamw_launches(std::size_t tensors_with_elements) {
    return tensors_with_elements == 0 ? 1 : (tensors_with_elements + kAdamWTensorsPerLaunch - 1) / kAdamWTensorsPerLaunch;
}

}  // namespace tewb::kernels

#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "optimizer/adamw_math.h"
#include "tewb_kernels/adamw_types.h"

// The AdamW step's argument rules, one copy for the kernel (adamw_api.cpp) and the host twin
// (adamw_host.cpp). Each fails with KernelError "<call>: <what>" (a tensor's with "<call> (tensor <i>)")
// before anything is written.
namespace tewb::kernels::detail {

// Checks the call: tensors not null when count > 0, step a float, each hyperparameter in PyTorch's range
// and finite in float32, and every tensor that has elements (its four buffers, its bfloat16 copy when set,
// numel at most kAdamWMaxNumel; with fp8.data set: rows, cols > 0 with rows * cols == numel in at most
// kAdamWMaxChunks tiles, and the FP8 output as check_fp8_output takes it; no buffer given twice, the FP8
// outputs' included). Returns the tensors that have elements, in order.
std::vector<AdamWTensor> checked_adamw_tensors(const char* call, const AdamWTensor* tensors, std::size_t count, const float* step,
                                               double lr, double beta1, double beta2, double weight_decay, double eps);

// The checked hyperparameters in float32.
AdamWScalars adamw_scalars(double lr, double beta1, double beta2, double weight_decay, double eps);

// Tiles of kAdamWFp8Tile x kAdamWFp8Tile of a [rows, cols] matrix.
std::size_t adamw_fp8_tiles(std::size_t rows, std::size_t cols);

// Chunks (thread blocks) of a checked tensor with numel > 0: its tiles when it has an FP8 output, its flat
// chunks of kAdamWChunkElements otherwise.
std::size_t adamw_chunks(const AdamWTensor& t);

// How the checked tensors go into launches, as [first, last) ranges of at most kAdamWTensorsPerLaunch;
// adamw_launches(work) of them: one empty range when there is no work (that launch advances the step).
std::vector<std::pair<std::size_t, std::size_t>> adamw_launch_ranges(std::size_t work);

}  // namespace tewb::kernels::detail

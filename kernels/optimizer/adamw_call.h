#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "optimizer/adamw_math.h"
#include "tewb_kernels/adamw.h"
#include "common/fp8_output.h"

// The AdamW step's checked parameters as the kernel (adamw.cu) and the host twin (adamw_host.cpp) work on them, and
// the rules that make them (adamw_checks.cpp): each fails with KernelError "<call>: <what>" (a parameter's with
// "<call> (tensor <i>)") before anything is written.
namespace tewb::kernels::detail {

// One parameter with elements: its buffers, numel, and its FP8 output (fp8.data null: none) as a [rows, cols] matrix.
// A kernel parameter (adamw.cu copies a launch's worth into its parameters).
struct AdamWTensor {
    float* param = nullptr;
    const float* grad = nullptr;
    float* exp_avg = nullptr;
    float* exp_avg_sq = nullptr;
    void* param_bf16 = nullptr;
    std::size_t numel = 0;
    Fp8Output fp8{};
    std::size_t rows = 0;
    std::size_t cols = 0;
};

// Checks the call: parameters not null when count > 0, step a float32 scalar, each hyperparameter in PyTorch's range
// and finite in float32, and every parameter that has elements (its four float32 tensors of param's size, its
// bfloat16 copy when set, numel at most kAdamWMaxNumel; with fp8.data set: an FP8 tensor of param's shape in at most
// kAdamWMaxChunks tiles, as check_fp8_output takes it; no buffer given twice, the FP8 outputs' included). Returns the
// parameters that have elements, in order.
std::vector<AdamWTensor> checked_adamw_tensors(const char* call, const AdamWParameter* parameters, std::size_t count,
                                               const float* step, double lr, double beta1, double beta2, double weight_decay,
                                               double eps);

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

#pragma once

#include <cstddef>

#include "tewb_kernels/entry_points.h"
#include "tewb_kernels/tensor.h"

namespace tewb::kernels {

// One parameter of an AdamW step: param, grad, exp_avg and exp_avg_sq float32 of one shape (param's [rows, cols];
// a tensor without elements is skipped and nothing else of it is looked at); param_bf16 (data null: none) bfloat16
// of param's size, which receives the updated parameter rounded to nearest even (the bfloat16 copy the forward
// reads); fp8 (data null: none) the parameter's FP8 copies as the next forward's cast would write them.
struct AdamWParameter {
    Tensor param;
    Tensor grad;
    Tensor exp_avg;
    Tensor exp_avg_sq;
    Tensor param_bf16;
    Tensor fp8;
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

TEWB_ENTRY_POINTS(
// One AdamW step over `count` tensors (a model's parameters) in ONE launch per kAdamWTensorsPerLaunch tensors
// that have elements (adamw_launches below; one launch also when none has): what LibTorch does in
// `_foreach_add_(steps, 1)`, `_fused_adamw_` (which splits at 36 tensors / 320 chunks per launch) and a
// `_foreach_copy_` of the bfloat16 copies, and, for tensors with an FP8 output, the next forward's
// cast_transpose_multi_to_fp8 of the weights (below). PyTorch's torch.optim.AdamW(fused=True) with amsgrad =
// False, maximize = False, no grad scaler, a float lr. `parameters` is host memory; every tensor in it is in
// device memory; no two tensors share a buffer. Graph-capturable: no host reads of device values, no
// allocation, no copies.
//
// The step: `step` is one float32 ([1, 1]) for the whole list (all tensors step together). Every thread block
// computes with t = *step + 1 (float32); the last block of the last launch to finish writes *step = t, so
// the step advances exactly once per call however many launches it takes. Its arrival counter is a static
// __device__ variable of adamw.cu, zero at module load and reset by that last block: two AdamW steps must
// not run at the same time (two streams, two graphs replayed at once); a faulting launch leaves it undefined.
//
// Per element, in float32 with the hyperparameters rounded to float32 (lr, beta1, beta2, weight_decay, eps
// are doubles here, as in PyTorch's API), PyTorch 2.11's CUDA kernel (fused_adam_utils.cuh, ADAMW mode) in
// its order:
//   bias_correction1 = 1 - beta1^t,  bias_correction2 = 1 - beta2^t
//   step_size = lr / bias_correction1
//   if weight_decay != 0:  param = fma(-(lr * weight_decay), param, param)
//   exp_avg = fma(beta1, exp_avg, fma(-beta1, grad, grad))
//   exp_avg_sq = fma(beta2, exp_avg_sq, fma(-beta2, grad * grad, grad * grad))
//   denom = sqrt(exp_avg_sq) / sqrt(bias_correction2) + eps
//   param = param - step_size * exp_avg / denom
//   param_bf16 (where set) = bfloat16(param), round to nearest even (NaN: 0x7fff, CUDA's canonical one).
// A non-finite grad is not special: NaN propagates. The host twin runs the same arithmetic
// (optimizer/adamw_math.h), bit for bit this kernel's.
//
// FP8 outputs (fp8.data set: E4M3 or E5M2 of param's shape [rows, cols]): from the updated param, bit for bit what
// cast_transpose_multi_to_fp8 (cast_multi.h) writes for x = param, out = fp8, with the same conversion
// (common/elementwise.cuh): fp8.data[r * cols + c] = fp8(param * scale[0]) (round to nearest even, saturated
// to the largest finite value, NaN to 0x7f), fp8.transposed[c * rows + r] the same bytes (not written when
// null), and max |param| combined into fp8.amax[0] (when not null) as the larger of the float bits, so a
// NaN wins and a larger value already there stays. So the forward after the step needs no cast of the
// weights. Such a tensor goes in the same launch as the others: its thread blocks each take a 64 x 64 tile
// (kAdamWFp8Tile) instead of a flat chunk, stage the tile's FP8 bytes in shared memory and write the
// transposed copy along its own rows (16-byte stores where whole and aligned, 4-byte stores of the data).
//
// Against PyTorch: the CUDA kernel's formula above, bit for bit, except (1) beta^t: PyTorch takes powf (CUDA
// documents it to a few ulps), this kernel the double power rounded to float32 (the correctly rounded float
// power, unless the exact one lies within about 2^-28 relative of a float rounding boundary); where they
// differ, a bias correction differs by an ulp of the power (glibc's powf, not correctly rounded either,
// differs from it in about 1 % of beta^t over the usual betas and 20000 steps: tst_host_adamw); (2) the weight decay is written as nvcc contracts PyTorch's
// `param -= lr * weight_decay * param` by default (FMUL, then FFMA(-(lr * wd), param, param): seen with
// nvdisasm on that line compiled by this toolkit, not on PyTorch's own binary); (3) one step for the list,
// PyTorch's a step tensor per parameter (the same while they move together).
// PyTorch's CPU kernel (FusedAdamKernel.cpp) rounds differently (its scalars in double, its own forms):
// expect agreement to a few float32 ulps there, not bits.
//
// Exactness against the formula in double precision, one step from the same float32 state and float32
// hyperparameters (tst_host_adamw; measured worst 0.61 of a bound):
//   exp_avg within 2^-22 * (beta1 * |exp_avg| + (1 - beta1) * |grad|), exp_avg_sq within 2^-22 * (beta2 *
//   exp_avg_sq + (1 - beta2) * grad^2), param within 2^-22 * |param| + u * 2^-21 * (8 + beta1^t /
//   (1 - beta1^t) + beta2^t / (1 - beta2^t)) with u = step_size * (beta1 * |exp_avg| + (1 - beta1) *
//   |grad|) / denom: float32's own bias corrections cancel (1 - 0.999^1 loses 10 bits), as PyTorch's do.
//
// Argument errors (KernelError "tewb::kernels::adamw_step: ..." before any launch): tensors null with count
// > 0; step null or not 4-byte aligned; lr, weight_decay, eps below 0 or not finite in float32; beta1, beta2
// outside [0, 1); for a tensor with elements ("(tensor i)" in the message): param, grad, exp_avg or
// exp_avg_sq null or not 4-byte aligned, param_bf16 not 2-byte aligned, numel above kAdamWMaxNumel; with
// fp8.data set: rows or cols 0 or rows * cols != numel, more than kAdamWMaxChunks tiles, fp8.scale null or
// not 4-byte aligned, fp8.amax not 4-byte aligned, an FP8 type other than E4M3 and E5M2, fp8.transposed the
// same as fp8.data; one buffer given twice (param, grad, exp_avg, exp_avg_sq, param_bf16 and, with fp8.data
// set, fp8.data, fp8.transposed, fp8.scale, fp8.amax). With fp8.data null the other fp8 fields, rows and
// cols are not looked at. Tensors with numel 0 are skipped unchecked. Loads and stores are 16 bytes (the
// bfloat16 copy 8) where a tensor's buffers are 16-byte aligned (its copy 8) and, with an FP8 output, cols
// is a multiple of 4; element by element otherwise; the values are the same either way. CUDA 12.1 or later
// (the list travels in the kernel's parameters).
void adamw_step(const AdamWParameter* parameters, std::size_t count, const Tensor& step, double lr, double beta1, double beta2,
                double weight_decay, double eps, Stream stream);
)

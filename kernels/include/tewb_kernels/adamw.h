#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "tewb_kernels/adamw_types.h"

namespace tewb::kernels {

// One AdamW step over `count` tensors (a model's parameters) in ONE launch per kAdamWTensorsPerLaunch tensors
// that have elements (adamw_launches in adamw_types.h; one launch also when none has): what LibTorch does in
// `_foreach_add_(steps, 1)`, `_fused_adamw_` (which splits at 36 tensors / 320 chunks per launch) and a
// `_foreach_copy_` of the bfloat16 copies, and, for tensors with an FP8 output, the next forward's
// cast_transpose_multi_to_fp8 of the weights (below). PyTorch's torch.optim.AdamW(fused=True) with amsgrad =
// False, maximize = False, no grad scaler, a float lr. `tensors` is host memory; every pointer in it is a
// device pointer; no two tensors share a buffer. Graph-capturable: no host reads of device values, no
// allocation, no copies.
//
// The step: `step` is one device float32 for the whole list (all tensors step together). Every thread block
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
// A non-finite grad is not special: NaN propagates. The host twin (host/adamw.h) runs the same arithmetic
// (optimizer/adamw_math.h), bit for bit this kernel's.
//
// FP8 outputs (fp8.data set; the tensor as a [rows, cols] matrix, rows * cols == numel): from the updated
// param, bit for bit what cast_transpose_multi_to_fp8 (cast_multi.h) writes for the item {param, Float32,
// rows, cols, fp8.scale, fp8.data, fp8.transposed, fp8.type, fp8.amax}, with the same conversion
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
void adamw_step(const AdamWTensor* tensors, std::size_t count, float* step, double lr, double beta1, double beta2,
                double weight_decay, double eps, cudaStream_t stream);

}  // namespace tewb::kernels

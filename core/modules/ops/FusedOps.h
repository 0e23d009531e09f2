#pragma once

#include "core/modules/ops/TeOps.h"

namespace tewb {

// The fused kernels of kernels/ behind the TeOps interface, on CUDA tensors, on LibTorch's current
// stream. Each op runs its kernel when the operands fit it (2-D, contiguous, float32 or bfloat16, FP8
// shapes in multiples of 16, delayed scaling without inspection for casts) and otherwise hands the call
// to the reference, so every call still gives the reference's numbers within the self-test's bounds.
// Null where it cannot run: no kernels in this build, a CPU device, compute capability below 8.0, or
// TEWB_TE_IMPL=reference in the environment (to compare against the reference on the same GPU).
const TeOps* fused_ops_for(const c10::Device& device);

}  // namespace tewb

#pragma once

#include "core/modules/ops/TeOps.h"

namespace tewb {

// The fused kernels of kernels/ behind the TeOps interface, on CUDA tensors, on LibTorch's current
// stream; built only with the kernels and a CUDA LibTorch (TEWB_FUSED_OPS). Each op runs its kernel
// when the operands fit it (2-D, contiguous, float32 or bfloat16, FP8 shapes in multiples of 16,
// delayed scaling without inspection for casts) and otherwise hands the call to the reference, so every
// call still gives the reference's numbers within the self-test's bounds. Whether a run uses these at
// all is select_ops' decision (OpsChoice.h): CUDA, compute capability 8.0 and up, not TEWB_TE_IMPL=reference.
const TeOps& fused_ops();

}  // namespace tewb

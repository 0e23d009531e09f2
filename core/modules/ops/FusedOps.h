#pragma once

#include "core/modules/ops/TeOps.h"

namespace tewb {

// The fused kernels of kernels/ behind the TeOps interface: one orchestration, two implementations of
// each kernel. fused_cuda_ops runs the CUDA kernels and cuBLASLt on CUDA tensors, on LibTorch's current
// stream (built with the kernels and a CUDA LibTorch: TEWB_FUSED_CUDA); fused_host_ops runs the same
// code over the host kernels (tewb_kernels/host) on CPU tensors, so the fused path runs, is counted and
// is checked on every machine (its FP8 GEMMs are float32 emulation, and records say so). Each op runs
// its kernel when the operands fit it (2-D, row-major, float32 or bfloat16, on the implementation's
// device; GEMMs as cuBLASLt's rule table allows) and otherwise hands the call to the reference, noting
// the fallback (Fallbacks.h). Which one a run uses is select_ops' decision (OpsChoice.h).
const TeOps& fused_host_ops();
#ifdef TEWB_FUSED_CUDA
const TeOps& fused_cuda_ops();
#endif

}  // namespace tewb

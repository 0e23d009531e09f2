#pragma once

// RMSNorm where rms_norm.cu runs it on LayerNorm's fast kernels (fast_dispatch.cuh's rule): the host twins' fast
// parts live beside LayerNorm's (normalization_host.cpp), whose row order they share. Plain C++.
#include <functional>

#include "normalization/normalization_call.h"

namespace tewb::kernels::host {

// The forward's rstd of a row (its hidden floats) in the fast kernel's order; empty where that kernel would not run
// (the plain kernel's order then: rms_norm_host.cpp). Safe to call from several threads at once.
std::function<float(const float* row)> rms_norm_forward_fast_rstd(const detail::RmsNormForwardCall& call);

// The backward's dx, dgamma and the launch noted in the fast kernel's order; false, with nothing done, where that kernel
// would not run (grad's pointer counts in its rule; the FP8 form's is rms_norm_backward_banded's).
bool rms_norm_backward_fast(const detail::RmsNormBackwardCall& call);
// rms_norm_backward_quantize's banded kernel: dx, dgamma in its bands' order, the FP8 bytes, transposed copy and amax,
// one launch noted; false, with nothing done, where it would not run (no FP8 output, rows past 2048, the fast rule).
bool rms_norm_backward_banded(const detail::RmsNormBackwardCall& call);

}  // namespace tewb::kernels::host

#pragma once

// RMSNorm's backward where rms_norm.cu runs it on LayerNorm's fast kernel (fast_dispatch.cuh's rule): its host twin
// lives beside LayerNorm's (normalization_host.cpp), whose order it shares. Plain C++.
#include "normalization/normalization_call.h"

namespace tewb::kernels::host {

// dx, dgamma and the launch noted in the fast kernel's order; false, with nothing done, where that kernel would not run.
bool rms_norm_backward_fast(const detail::RmsNormBackwardCall& call);

}  // namespace tewb::kernels::host

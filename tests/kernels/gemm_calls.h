#pragma once

// The GEMM's entry points (tewb_kernels/gemm.h) called with one GemmCall, as the GEMM suites' cases are written:
// a case builds a call, changes one field, and runs it.
#include "tewb_kernels/gemm.h"
#include "tewb_kernels/gemm_types.h"

namespace tewb::test::calls {

inline void host_gemm(const kernels::GemmCall& g) {
    kernels::host::gemm(g.a, g.b, g.d, g.epilogue, g.options, g.workspace, kernels::Stream{});
}

// The CUDA entry point on the default stream (argument checks only where no GPU is present).
inline void cuda_gemm(const kernels::GemmCall& g) {
    kernels::gemm(g.a, g.b, g.d, g.epilogue, g.options, g.workspace, kernels::Stream{});
}

}  // namespace tewb::test::calls

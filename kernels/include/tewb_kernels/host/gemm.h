#pragma once

#include "tewb_kernels/gemm_rules.h"
#include "tewb_kernels/gemm_types.h"

namespace tewb::kernels::host {

// gemm (tewb_kernels/gemm.h) over host memory, with the same arguments and meaning: d[m, n] = a·bᵀ, a [m, k]
// (stored [k, m] when a.transposed), b [n, k] (or [k, n]); float32, bfloat16 or FP8 operands (each element
// decoded, then multiplied by its scale_inv: the tensor's one float, or its block's in the layouts gemm_types.h
// documents); every epilogue, GELU in the tanh form of kernels/activation; an FP8 d is fp8(value · d_scale[0])
// with d_amax[0] = max |value|. The rule table comes first (gemm_refusal with the host target: every rule but
// the compute-capability ones), so a refusal throws GemmRefused exactly as the wrapper does. The workspace
// fields are checked by the rules but never touched. One launch is counted per call (one cuBLASLt matmul);
// none for m = 0 or n = 0, as on the GPU.
//
// Float32 accumulation in a fixed order (eight interleaved partial sums along k, combined pairwise), rows of
// d split over the hardware threads; the result does not depend on the split or the thread count.
//
// Against cuBLASLt the accumulation order differs, so results agree within float32 rounding of the sum, not
// bit for bit: |d_host - d_gpu| <= k · 2^-23 · Σ_k |a·b| before the output rounding (float32 out: about 1e-6
// relative on typical data), then at most one unit in the last place of the output type where the two land
// on either side of a rounding boundary (bfloat16 2^-8, E4M3 2^-3, E5M2 2^-2 relative); d_amax and the
// bias gradients within the same float32 bound; GELU (host tanhf against CUDA's) adds a few float32 ulps.
// FP8 with Accumulation::Fast is less accurate on the GPU itself (the tensor cores' fast accumulation keeps
// fewer bits): compare those at about 1e-2 relative. FP8 scales are applied per element here and after the
// block's accumulation by cuBLASLt: the same value up to one float32 rounding per product.
void gemm(const GemmArgs& args);

}  // namespace tewb::kernels::host

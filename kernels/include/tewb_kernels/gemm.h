#pragma once

#include <cstddef>

#include "tewb_kernels/entry_points.h"
#include "tewb_kernels/gemm_types.h"
#include "tewb_kernels/tensor.h"

// d = a·bᵀ with its epilogue (gemm_types.h's GemmCall says what each tensor is and what the call accepts; the
// rule table, gemm_rules.h, refuses the rest with GemmRefused before anything runs). Writes d (its data, and
// d.amax for an FP8 d) and the epilogue's aux (GeluAuxBias) or bias_grad (DGeluBGrad, BGradB).
//
// The CUDA entry point runs cuBLASLt on the stream it is given. The host twin computes the same over host memory:
// each operand element decoded, then multiplied by its scale_inv (the tensor's one float, or its block's in the
// layouts tensor.h documents); every epilogue, GELU in the tanh form of kernels/activation; an FP8 d is
// fp8(value · d.scale[0]) with d.amax[0] = max |value|. Its rule table is the host target's (every rule but the
// compute-capability ones); it checks the workspace but never touches it; it counts one launch per call (one
// cuBLASLt matmul), none for m = 0 or n = 0, as on the GPU. Float32 accumulation in a fixed order (eight
// interleaved partial sums along k, combined pairwise), rows of d split over the hardware threads; the result does
// not depend on the split or the thread count.
//
// Against cuBLASLt the accumulation order differs, so results agree within float32 rounding of the sum, not bit
// for bit: |d_host - d_gpu| <= k · 2^-23 · Σ_k |a·b| before the output rounding (float32 out: about 1e-6 relative
// on typical data), then at most one unit in the last place of the output type where the two land on either side
// of a rounding boundary (bfloat16 2^-8, E4M3 2^-3, E5M2 2^-2 relative); d.amax and the bias gradients within the
// same float32 bound; GELU (host tanhf against CUDA's) adds a few float32 ulps. FP8 with Accumulation::Fast is
// less accurate on the GPU itself (the tensor cores' fast accumulation keeps fewer bits): compare those at about
// 1e-2 relative. FP8 scales are applied per element on the host and after the block's accumulation by cuBLASLt:
// the same value up to one float32 rounding per product.
TEWB_ENTRY_POINTS(void gemm(const Tensor& a, const Tensor& b, const Tensor& d, const GemmEpilogueTensors& epilogue,
                            const GemmOptions& options, const Workspace& workspace, Stream stream);)

// The cuBLASLt side's own questions (CUDA builds only).
namespace tewb::kernels {

// The workspace cuBLASLt can use on `device`: 32 MiB at compute capability 9.0 and up, 4 MiB below.
std::size_t gemm_workspace_bytes(int device);

// Whether cuBLASLt runs block-scaled FP8 GEMMs (1×128 activations × 128×128 weights) on `device`: compute
// capability 9.x and a real 256³ GEMM with real scale pointers, run once on a stream of its own and synchronised
// (cuBLASLt's heuristic refuses the block modes without scale pointers, so asking it alone said "no" on the
// H200). Cached per device; safe while another stream is being captured into a CUDA graph.
bool block_gemm_supported(int device);

// How many descriptor sets the cache holds (all devices): for tests and the self-test's report.
std::size_t gemm_cache_size();

// Whether a new plan is timed: on its first call outside CUDA graph capture, cuBLASLt's heuristic's top candidates
// (up to 8) each run once to warm up and three times timed, and the fastest is kept for every later call (the call's
// own result comes from the kept one; calls that read d are never timed: gemm_can_be_timed). On by default;
// TEWB_GEMM_AUTOTUNE=0 in the environment turns it off (every plan the heuristic's first answer, the same algorithm
// in every run, so a run's bits repeat). Plans made before a change keep their algorithm.
void set_gemm_autotune(bool on);
bool gemm_autotune();
// Drops every cached plan (the kernel benchmark's before-and-after of timing; nothing else needs it).
void gemm_forget_plans();

}  // namespace tewb::kernels

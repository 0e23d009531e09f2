#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "tewb_kernels/gemm_types.h"

namespace tewb::kernels {

// The workspace cuBLASLt can use on `device`: 32 MiB at compute capability 9.0 and up, 4 MiB below.
std::size_t gemm_workspace_bytes(int device);

void gemm(const GemmArgs& args, cudaStream_t stream);

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

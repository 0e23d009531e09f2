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

}  // namespace tewb::kernels

#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "tewb_kernels/gemm_types.h"

namespace tewb::kernels {

// The workspace cuBLASLt can use on `device`: 32 MiB at compute capability 9.0 and up, 4 MiB below.
std::size_t gemm_workspace_bytes(int device);

void gemm(const GemmArgs& args, cudaStream_t stream);

// Whether cuBLASLt offers block-scaled FP8 GEMMs (1×128 activations × 128×128 weights) on `device`: compute
// capability 9.x and an algorithm found for a small probe shape (no launch, no memory). Cached per device.
bool block_gemm_supported(int device);

// How many descriptor sets the cache holds (all devices): for tests and the self-test's report.
std::size_t gemm_cache_size();

}  // namespace tewb::kernels

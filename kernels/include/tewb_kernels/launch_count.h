#pragma once

#include <cstdint>

namespace tewb::kernels {

// How many device launches (CUDA kernels and cuBLASLt matmuls) this process has made through the
// library. Tests read it around a run to prove which path ran (TEWB_TE_IMPL=reference: none).
std::uint64_t launch_count();

}  // namespace tewb::kernels

#pragma once

#include <cstdint>

namespace tewb::kernels {

// How many device launches (CUDA kernels and cuBLASLt matmuls) this process has made through the
// library. Tests read it around a run to prove which path ran (TEWB_TE_IMPL=reference: none).
std::uint64_t launch_count();

// What the device runs for this library's calls since the process began, by kind. A host run counts what the
// same calls run on a GPU, so the launch ledger of a CPU step is the GPU's.
struct LaunchTally {
    std::uint64_t kernels = 0;     // this library's CUDA kernels and cuBLASLt's matmul kernels: launch_count()
    // Kernels a library runs beside the one asked for: cuBLASLt's epilogue reductions (e.g. the bias gradient of
    // BGRADB), as observed on a GPU (kernels/gemm/observed_library_work.csv).
    std::uint64_t helpers = 0;
    std::uint64_t memsets = 0;     // device memsets: this library's own and those observed beside a library call
    // Library calls whose helper kernels and memsets no GPU run has observed: counted as none, so not known.
    std::uint64_t unobserved = 0;
    std::uint64_t total() const { return kernels + helpers + memsets; }
    friend bool operator==(const LaunchTally&, const LaunchTally&) = default;
    friend LaunchTally operator-(const LaunchTally& a, const LaunchTally& b) {
        return {a.kernels - b.kernels, a.helpers - b.helpers, a.memsets - b.memsets, a.unobserved - b.unobserved};
    }
};

LaunchTally launch_tally();

}  // namespace tewb::kernels

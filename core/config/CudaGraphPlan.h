#pragma once

#include <string>

#include "core/config/RunConfig.h"

namespace tewb {

// Whether a run's timed steps replay one captured CUDA graph and, in words, why or why not. Decided from
// plain facts before the run, so that it can be tested anywhere; core/train/StepGraph does the capture.
struct GraphDecision {
    bool use = false;
    std::string reason;  // e.g. "no CUDA graph: CPU runs are eager"
};

// `launch_blocking`: CUDA_LAUNCH_BLOCKING is set to something other than 0 (a debugging setting under
// which every launch waits: a graph would hide which kernel failed). `cuda_build`: LibTorch has CUDA.
GraphDecision decide_cuda_graph(const RunConfig& resolved, bool cuda_build, bool launch_blocking);
// With this process's environment; `cuda_build` as above.
GraphDecision decide_cuda_graph(const RunConfig& resolved, bool cuda_build);

}  // namespace tewb

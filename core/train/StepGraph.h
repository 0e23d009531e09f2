#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <c10/core/Device.h>

#include "core/config/CudaGraphPlan.h"
#include "core/config/RunConfig.h"

namespace tewb {

// decide_cuda_graph (CudaGraphPlan.h) for this build and this process's environment.
GraphDecision decide_cuda_graph(const RunConfig& resolved);

// One whole training step captured as a CUDA graph (LibTorch's at::cuda::CUDAGraph), and the stream it
// lives on. Construction moves the calling thread onto a fresh side stream (capture needs one), after
// the work queued so far on the default stream; destruction moves it back after that stream's work.
// Eager warm-up steps run on the same stream, so that cuBLAS workspaces and other per-stream state exist
// before the capture.
class StepGraph {
public:
    virtual ~StepGraph() = default;
    // Records `step` (no host synchronisation inside: loss and statistics are read after replays) into
    // the graph; nothing runs. Throws Error naming what failed, suggesting --cuda-graph off.
    virtual void capture(const std::function<void()>& step) = 0;
    virtual void replay() = 0;
    virtual bool captured() const = 0;
    // Kernel launches per replay: the graph's kernel nodes.
    virtual int kernel_nodes() const = 0;
    // The bytes the graph's private memory pool holds after the capture (the caching allocator's segments owned
    // by it): the memory every replay reuses, part of the run's peak, reported on its own. None where the
    // allocator keeps no segments to read (the cudaMallocAsync backend).
    virtual std::optional<std::uint64_t> pool_bytes() const = 0;
};

// Throws std::logic_error in builds whose LibTorch has no CUDA.
std::unique_ptr<StepGraph> make_step_graph(const c10::Device& device);

}  // namespace tewb

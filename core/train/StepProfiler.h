#pragma once

#include <memory>
#include <string>

#include "core/results/RunRecord.h"

namespace tewb {

// Traces what runs between construction and finish() with LibTorch's Kineto profiler: CPU operators always
// (and this project's own kernels, which FusedOps names as user scopes), CUDA kernels through CUPTI when
// `cuda`. One at a time per process (LibTorch's rule); construction throws DataError when the profiler does
// not start (another one running, or a build without Kineto).
class StepProfiler {
public:
    explicit StepProfiler(bool cuda);
    ~StepProfiler();  // stops the profiler when finish() was not reached (an exception in the step)
    StepProfiler(const StepProfiler&) = delete;
    StepProfiler& operator=(const StepProfiler&) = delete;

    // Stops the profiler, writes the trace (Chrome trace JSON: Perfetto, chrome://tracing) to `trace_path`
    // through write_file_atomically, and returns its top-kernels table against the step's `step_ms`.
    // Throws DataError when the trace cannot be written.
    KernelProfile finish(int step, double step_ms, const std::string& trace_path);

private:
    bool cuda_ = false;
    bool active_ = false;
    std::string messages_;  // what Kineto wrote to stderr (errors and warnings), for a trace that came out empty
};

}  // namespace tewb

#pragma once

#include <cstdint>
#include <memory>
#include <functional>
#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "core/common/StepSegments.h"
#include "core/fp8/Fp8Stats.h"

namespace tewb {

// What the trainer learns about one step once it has finished.
struct StepReading {
    int step = 0;  // 0-based
    float loss = 0;
    double step_ms = 0;
    std::uint64_t mem_bytes = 0;     // peak memory so far in this phase
    std::vector<Fp8SlotSample> fp8;  // FP8 runs: one sample per statistics row
    std::optional<StepBreakdown> breakdown;  // steps begun with `segmented`
};

// How a step is timed and read back. On a GPU: CUDA events around the step, and the loss and FP8
// statistics copied to pinned memory without waiting, so a step is read while the next one is already
// queued (no extra host synchronisation); memory is the caching allocator's peak. On the CPU: the
// host's steady clock, the step read at once; memory is the process's peak RSS.
//
// A timer is also the segment sink (StepSegments.h) of the step it times: a step begun with `segmented`
// is split where the step's code enters a segment (CUDA events recorded on the step's stream, or the
// host clock), starting in the forward segment. A CUDA-graph replay is begun without: it is one launch.
class StepTimer : public SegmentSink {
public:
    virtual ~StepTimer() = default;
    // Peak memory starts again: at the run's start and at the first timed step.
    virtual void reset_peak_memory() = 0;
    virtual void begin_step(int step, bool segmented) = 0;
    // After the optimizer step of `step`: its loss (a scalar tensor) and, in FP8 runs, what gives the
    // statistics (Fp8Context::statistics()), called after the step's end is taken: gathering them is
    // bookkeeping the step's time must not include (null without FP8). Returns the reading of a step that
    // is now known, if any.
    virtual std::optional<StepReading> end_step(int step, const at::Tensor& loss,
                                                const std::function<at::Tensor()>& fp8_statistics) = 0;
    // After the last step (or a cancel): the reading still in flight, if any.
    virtual std::optional<StepReading> finish() = 0;
};

// `fp8_rows`: rows of the FP8 statistics per step (0 without FP8).
std::unique_ptr<StepTimer> make_step_timer(const c10::Device& device, int total_steps, std::int64_t fp8_rows);

}  // namespace tewb

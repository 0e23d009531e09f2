#pragma once

#include <string_view>

namespace tewb {

// The parts a training step's time is split into, so that a user sees why one configuration is faster
// than another. Communication is a data-parallel job's gradient all-reduce that the backward did not hide
// (the wait after it); Fp8 is the FP8 bookkeeping: the scale updates after the forward and after the
// backward (the casts belong to the pass that runs them).
enum class StepSegment { Forward, Backward, Communication, Optimizer, Fp8 };
inline constexpr StepSegment kStepSegments[] = {StepSegment::Forward, StepSegment::Backward, StepSegment::Communication,
                                                StepSegment::Optimizer, StepSegment::Fp8};

std::string_view to_string(StepSegment segment);  // "forward", "backward", "communication", "optimizer", "fp8"

// Milliseconds per segment of one step (or a mean over steps); the parts add up to the step's time.
struct StepBreakdown {
    double forward_ms = 0;
    double backward_ms = 0;
    double optimizer_ms = 0;
    double fp8_ms = 0;
    double communication_ms = 0;  // last, so that runs without it initialise as before

    double& at(StepSegment segment);
    double at(StepSegment segment) const;
    double total_ms() const { return forward_ms + backward_ms + communication_ms + optimizer_ms + fp8_ms; }
    friend bool operator==(const StepBreakdown&, const StepBreakdown&) = default;
};

// Who times the segments of the step in progress: the trainer's step timer, installed for the eager steps
// it times. The step's code says which segment runs from here on (enter_segment); a nested part (the FP8
// update inside the forward or the backward) uses SegmentGuard, which goes back to the segment before it.
// Without a sink (tests, a module used on its own, a CUDA-graph capture or replay) both do nothing.
class SegmentSink {
public:
    virtual ~SegmentSink() = default;
    virtual void enter(StepSegment segment) = 0;
    virtual StepSegment current() const = 0;
};

// Process-wide, not per thread: the autograd engine runs the backward's FP8 update on its own threads.
// One run trains at a time per process (the trainer's peak-memory figures are process-wide already).
void install_segment_sink(SegmentSink* sink);
void enter_segment(StepSegment segment);

class SegmentGuard {
public:
    explicit SegmentGuard(StepSegment segment);
    ~SegmentGuard();
    SegmentGuard(const SegmentGuard&) = delete;
    SegmentGuard& operator=(const SegmentGuard&) = delete;

private:
    SegmentSink* sink_;
    StepSegment previous_ = StepSegment::Forward;
};

// Installs a sink for a scope and removes it at the end (also on an exception).
class SegmentSinkScope {
public:
    explicit SegmentSinkScope(SegmentSink* sink) { install_segment_sink(sink); }
    ~SegmentSinkScope() { install_segment_sink(nullptr); }
    SegmentSinkScope(const SegmentSinkScope&) = delete;
    SegmentSinkScope& operator=(const SegmentSinkScope&) = delete;
};

}  // namespace tewb

#include "core/common/StepSegments.h"

#include <atomic>

namespace tewb {

namespace {

std::atomic<SegmentSink*> installed{nullptr};

}  // namespace

std::string_view to_string(StepSegment segment) {
    switch (segment) {
        case StepSegment::Forward: return "forward";
        case StepSegment::Backward: return "backward";
        case StepSegment::Communication: return "communication";
        case StepSegment::Optimizer: return "optimizer";
        case StepSegment::Fp8: return "fp8";
    }
    return "forward";
}

double& StepBreakdown::at(StepSegment segment) {
    switch (segment) {
        case StepSegment::Forward: return forward_ms;
        case StepSegment::Backward: return backward_ms;
        case StepSegment::Communication: return communication_ms;
        case StepSegment::Optimizer: return optimizer_ms;
        case StepSegment::Fp8: return fp8_ms;
    }
    return forward_ms;
}

double StepBreakdown::at(StepSegment segment) const {
    return const_cast<StepBreakdown&>(*this).at(segment);
}

void install_segment_sink(SegmentSink* sink) {
    installed.store(sink);
}

void enter_segment(StepSegment segment) {
    if (SegmentSink* sink = installed.load()) sink->enter(segment);
}

SegmentGuard::SegmentGuard(StepSegment segment) : sink_(installed.load()) {
    if (sink_ == nullptr) return;
    previous_ = sink_->current();
    sink_->enter(segment);
}

SegmentGuard::~SegmentGuard() {
    if (sink_ != nullptr && installed.load() == sink_) sink_->enter(previous_);
}

}  // namespace tewb

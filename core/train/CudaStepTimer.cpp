#include "core/train/CudaStepTimer.h"

#include <stdexcept>

#include "core/train/StepTimer.h"

#ifdef TEWB_TORCH_HAS_CUDA
#include <array>
#include <memory>
#include <optional>
#include <vector>

#include <ATen/cuda/CUDAContext.h>

#include <ATen/cuda/CUDAEvent.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDACachingAllocator.h>

#include "core/fp8/Fp8State.h"
#endif

namespace tewb {

#ifdef TEWB_TORCH_HAS_CUDA
namespace {

// Two steps are in flight at most: the one being queued and the one before it, read back now.
class CudaStepTimer final : public StepTimer {
public:
    CudaStepTimer(const c10::Device& device, int total_steps, std::int64_t fp8_rows) : device_(device) {
        const auto pinned = at::TensorOptions().dtype(at::kFloat).pinned_memory(true);
        losses_ = at::empty({total_steps}, pinned);
        if (fp8_rows > 0) {
            fp8_ = at::empty({total_steps, fp8_rows, Fp8Context::kStatisticsColumns}, pinned);
        }
    }

    void reset_peak_memory() override { c10::cuda::CUDACachingAllocator::resetPeakStats(device_.index()); }

    void begin_step(int step, bool segmented) override {
        InFlight& s = slot(step);
        s.stream = at::cuda::getCurrentCUDAStream(device_.index());
        s.start.record(*s.stream);
        s.segmented = segmented;
        s.marks_used = 0;
        s.current = StepSegment::Forward;
        current_ = &s;
    }

    // An event on the step's stream closes the segment that ran until now (from any thread: the backward's
    // FP8 update runs on the autograd engine's).
    void enter(StepSegment segment) override {
        if (current_ == nullptr || !current_->segmented) return;
        InFlight& s = *current_;
        if (s.marks_used == s.marks.size()) s.marks.push_back({StepSegment::Forward, std::make_unique<at::cuda::CUDAEvent>(cudaEventDefault)});
        Mark& mark = s.marks[s.marks_used++];
        mark.ended = s.current;
        mark.event->record(*s.stream);
        s.current = segment;
    }

    StepSegment current() const override { return current_ != nullptr ? current_->current : StepSegment::Forward; }

    std::optional<StepReading> end_step(int step, const at::Tensor& loss,
                                        const std::function<at::Tensor()>& fp8_statistics) override {
        InFlight& current = slot(step);
        // The end first: the loss copy and the FP8 statistics are bookkeeping after the step, not its time.
        current.end.record(current.stream ? *current.stream : at::cuda::getCurrentCUDAStream(device_.index()));
        losses_.select(0, step).copy_(loss.detach(), /*non_blocking=*/true);
        if (fp8_.defined() && fp8_statistics) {
            fp8_.select(0, step).copy_(fp8_statistics(), /*non_blocking=*/true);
        }
        // The copies were queued after the end event: reading waits for this one, or it could read the pinned
        // buffers before the copies land.
        current.copied.record(at::cuda::getCurrentCUDAStream(device_.index()));
        current_ = nullptr;
        current.mem_bytes = peak_allocated();
        current.step = step;
        current.pending = true;
        InFlight& previous = slot(step + 1);  // the other slot: step - 1
        return previous.pending ? std::optional<StepReading>(read(previous)) : std::nullopt;
    }

    std::optional<StepReading> finish() override {
        for (InFlight& in_flight : in_flight_) {
            if (in_flight.pending) return read(in_flight);
        }
        return std::nullopt;
    }

private:
    struct Mark {
        StepSegment ended = StepSegment::Forward;  // the segment this event closes
        std::unique_ptr<at::cuda::CUDAEvent> event;
    };

    struct InFlight {
        at::cuda::CUDAEvent start{cudaEventDefault};
        at::cuda::CUDAEvent end{cudaEventDefault};
        at::cuda::CUDAEvent copied{cudaEventDisableTiming};  // after the loss and statistics copies
        std::optional<at::cuda::CUDAStream> stream;
        std::vector<Mark> marks;  // reused step after step
        std::size_t marks_used = 0;
        bool segmented = false;
        StepSegment current = StepSegment::Forward;
        std::uint64_t mem_bytes = 0;
        int step = 0;
        bool pending = false;
    };

    InFlight& slot(int step) { return in_flight_[static_cast<std::size_t>(step % 2)]; }

    std::uint64_t peak_allocated() const {
        const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device_.index());
        const auto& aggregate = stats.allocated_bytes[static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
        return static_cast<std::uint64_t>(aggregate.peak);
    }

    StepReading read(InFlight& in_flight) {
        in_flight.end.synchronize();
        in_flight.copied.synchronize();
        in_flight.pending = false;
        StepReading reading;
        reading.step = in_flight.step;
        reading.step_ms = in_flight.start.elapsed_time(in_flight.end);
        if (in_flight.segmented) {
            StepBreakdown breakdown;
            const at::cuda::CUDAEvent* previous = &in_flight.start;
            for (std::size_t i = 0; i < in_flight.marks_used; ++i) {
                const Mark& mark = in_flight.marks[i];
                breakdown.at(mark.ended) += previous->elapsed_time(*mark.event);
                previous = mark.event.get();
            }
            breakdown.at(in_flight.current) += previous->elapsed_time(in_flight.end);
            reading.breakdown = breakdown;
        }
        reading.loss = losses_.data_ptr<float>()[in_flight.step];
        reading.mem_bytes = in_flight.mem_bytes;
        if (fp8_.defined()) {
            reading.fp8 = Fp8Context::read_statistics(fp8_.select(0, in_flight.step).data_ptr<float>(), fp8_.size(1));
        }
        return reading;
    }

    c10::Device device_;
    at::Tensor losses_;  // pinned [steps]
    at::Tensor fp8_;     // pinned [steps, rows, columns], FP8 runs only
    std::array<InFlight, 2> in_flight_;
    InFlight* current_ = nullptr;  // the step being queued, between begin_step and end_step
};

}  // namespace

std::unique_ptr<StepTimer> make_cuda_step_timer(const c10::Device& device, int total_steps, std::int64_t fp8_rows) {
    return std::make_unique<CudaStepTimer>(device, total_steps, fp8_rows);
}
#else
std::unique_ptr<StepTimer> make_cuda_step_timer(const c10::Device&, int, std::int64_t) {
    throw std::logic_error("a CUDA step timer was asked for, but this build's LibTorch has no CUDA");
}
#endif

}  // namespace tewb

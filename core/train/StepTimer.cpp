#include "core/train/StepTimer.h"

#include <chrono>
#include <fstream>
#include <string>

#include <sys/resource.h>

#include "core/fp8/Fp8State.h"
#include "core/train/CudaStepTimer.h"

namespace tewb {

namespace {

using Clock = std::chrono::steady_clock;

// The process's peak resident set size (VmHWM). Linux lets a process reset it to the current RSS, so
// each run (and its timed phase) gets its own peak even when several runs share one process; where the
// reset is refused the peak stays process-wide, which only overstates.
void reset_peak_rss() {
    std::ofstream clear_refs("/proc/self/clear_refs");
    clear_refs << "5";
}

std::uint64_t peak_rss_bytes() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmHWM:", 0) == 0) {
            return std::stoull(line.substr(6)) * 1024;  // reported in kB
        }
    }
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
}

class HostStepTimer final : public StepTimer {
public:
    void reset_peak_memory() override { reset_peak_rss(); }

    void begin_step(int, bool segmented) override {
        start_ = Clock::now();
        last_ = start_;
        segmented_ = segmented;
        current_ = StepSegment::Forward;
        breakdown_ = StepBreakdown{};
    }

    void enter(StepSegment segment) override {
        const Clock::time_point now = Clock::now();
        breakdown_.at(current_) += std::chrono::duration<double, std::milli>(now - last_).count();
        last_ = now;
        current_ = segment;
    }

    StepSegment current() const override { return current_; }

    std::optional<StepReading> end_step(int step, const at::Tensor& loss,
                                        const std::function<at::Tensor()>& fp8_statistics) override {
        StepReading reading;
        reading.step = step;
        reading.loss = loss.item<float>();  // waits for the step: its time includes all of it
        const Clock::time_point end = Clock::now();
        if (segmented_) {
            breakdown_.at(current_) += std::chrono::duration<double, std::milli>(end - last_).count();
            reading.breakdown = breakdown_;
        }
        reading.step_ms = std::chrono::duration<double, std::milli>(end - start_).count();
        reading.mem_bytes = peak_rss_bytes();
        if (fp8_statistics) {
            const at::Tensor stats = fp8_statistics().contiguous();
            reading.fp8 = Fp8Context::read_statistics(stats.data_ptr<float>(), stats.size(0));
        }
        return reading;
    }

    std::optional<StepReading> finish() override { return std::nullopt; }

private:
    Clock::time_point start_;
    Clock::time_point last_;
    bool segmented_ = false;
    StepSegment current_ = StepSegment::Forward;
    StepBreakdown breakdown_;
};

}  // namespace

std::unique_ptr<StepTimer> make_step_timer(const c10::Device& device, int total_steps, std::int64_t fp8_rows) {
    if (device.is_cuda()) {
        return make_cuda_step_timer(device, total_steps, fp8_rows);
    }
    return std::make_unique<HostStepTimer>();
}

}  // namespace tewb

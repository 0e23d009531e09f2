#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/device/GpuContention.h"
#include "core/device/MachineLoad.h"
#include "core/results/RunRecord.h"

namespace tewb {

// Samples what else the machine and the GPU did while a run's steps were timed: /proc at the start and the
// end of the timed steps (other processes' CPU time, the load average at the end) and, on CUDA, NVML at
// both ends (other processes on the device, clock-event reasons, clocks). The trainer starts it before the
// first timed step and stops it once the last one is known; `quality` then makes the record's verdict.
class QualityProbe {
public:
    // `cuda_device`: the run's CUDA device index; nothing on the CPU (GPU contention does not apply).
    // `idle_job_processes`: processes of the run's own job that hold a context on that device without computing
    // while it trains (a rank's launcher: idle_job_processes_on in core/dist/WorkerEnv.h), not counted as others.
    explicit QualityProbe(std::optional<int> cuda_device, std::vector<int> idle_job_processes = {});

    void start();
    void stop();
    bool stopped() const { return stopped_; }
    // This process's CPU jiffies between start and stop (0 when not measured): a job's rank sends it to rank 0,
    // whose other processes include the other ranks.
    std::uint64_t own_jiffies() const;

    // CV of the timed steps' ms, the machine's load (less `sibling_jiffies`, the CPU time of the job's other
    // ranks) and the GPU's contention, judged (judge_quality).
    MeasurementQuality quality(const std::vector<StepMetrics>& steps, std::uint64_t sibling_jiffies = 0) const;

private:
    using Clock = std::chrono::steady_clock;

    std::optional<int> cuda_device_;
    std::vector<int> idle_job_processes_;
    std::string pci_bus_id_;
    bool started_ = false;
    bool stopped_ = false;
    Clock::time_point start_time_;
    Clock::time_point stop_time_;
    ProcReading<CpuSnapshot> cpu_start_;
    ProcReading<CpuSnapshot> cpu_stop_;
    ProcReading<double> load_;
    std::vector<GpuContention> gpu_;
};

// The PCI bus id NVML finds a CUDA device by ("0000:1b:00.0"), from its CUDA properties; empty in a build
// without CUDA LibTorch.
std::string cuda_pci_bus_id(int device_index);

// The CUDA devices this process holds a (primary) context on, which NVML lists it on: where its runs trained. A
// data-parallel launcher tells its ranks (TEWB_LAUNCHER_GPUS). Empty without CUDA LibTorch or a GPU.
std::vector<int> cuda_devices_with_context();

// Two NVML samples as the record keeps them: the most other processes seen, the union of the reasons (in
// order of first appearance), the clocks of the last sample; unmeasured (with the first sample's reason) when
// either sample did not answer.
void add_gpu_samples(MeasurementQuality& quality, const std::vector<GpuContention>& samples);

}  // namespace tewb

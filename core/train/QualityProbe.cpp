#include "core/train/QualityProbe.h"

#include <algorithm>
#include <cstdio>
#include <exception>

#ifdef TEWB_TORCH_HAS_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

#include "core/common/Statistics.h"
#include "core/train/CpuThreads.h"

namespace tewb {

std::string cuda_pci_bus_id([[maybe_unused]] int device_index) {
#ifdef TEWB_TORCH_HAS_CUDA
    const cudaDeviceProp* p = at::cuda::getDeviceProperties(device_index);
    char text[32] = {};
    std::snprintf(text, sizeof text, "%04x:%02x:%02x.0", static_cast<unsigned>(p->pciDomainID),
                  static_cast<unsigned>(p->pciBusID), static_cast<unsigned>(p->pciDeviceID));
    return text;
#else
    return {};
#endif
}

std::vector<int> cuda_devices_with_context() {
    std::vector<int> devices;
#ifdef TEWB_TORCH_HAS_CUDA
    const int count = static_cast<int>(c10::cuda::device_count());
    for (int d = 0; d < count; ++d) {
        try {
            if (c10::cuda::hasPrimaryContext(static_cast<c10::DeviceIndex>(d))) devices.push_back(d);
        } catch (const std::exception&) {
            // LibTorch answers through its CUDA hooks; without them the device is left out (its launcher then counts
            // as another process in the ranks' measurement, as before): never a reason to fail the job.
        }
    }
#endif
    return devices;
}

void add_gpu_samples(MeasurementQuality& q, const std::vector<GpuContention>& samples) {
    q.gpu_applies = true;
    q.gpu_measured = !samples.empty();
    for (const GpuContention& s : samples) {
        if (!s.available) {
            q.gpu_measured = false;
            q.gpu_note = s.unavailable_reason.empty() ? "NVML did not answer" : s.unavailable_reason;
            break;
        }
    }
    if (samples.empty()) q.gpu_note = "no timed step ran";
    if (!q.gpu_measured) return;
    for (const GpuContention& s : samples) {
        q.gpu_other_processes = std::max(q.gpu_other_processes, s.other_processes);
        for (const std::string& reason : s.throttle_reasons) {
            if (std::find(q.gpu_throttle_reasons.begin(), q.gpu_throttle_reasons.end(), reason) == q.gpu_throttle_reasons.end()) {
                q.gpu_throttle_reasons.push_back(reason);
            }
        }
    }
    q.sm_clock_mhz = samples.back().sm_clock_mhz;
    q.max_sm_clock_mhz = samples.back().max_sm_clock_mhz;
}

QualityProbe::QualityProbe(std::optional<int> cuda_device, std::vector<int> idle_job_processes)
    : cuda_device_(cuda_device), idle_job_processes_(std::move(idle_job_processes)) {
    if (cuda_device_) {
        pci_bus_id_ = cuda_pci_bus_id(*cuda_device_);
        read_gpu_contention(pci_bus_id_);  // NVML starts on its first call: here, not in the timed steps' window
    }
}

void QualityProbe::start() {
    if (started_) return;
    started_ = true;
    if (cuda_device_) gpu_.push_back(read_gpu_contention(pci_bus_id_, idle_job_processes_));
    cpu_start_ = read_cpu_snapshot();
    start_time_ = Clock::now();
}

void QualityProbe::stop() {
    if (!started_ || stopped_) return;
    stopped_ = true;
    stop_time_ = Clock::now();
    cpu_stop_ = read_cpu_snapshot();
    load_ = read_load_average();
    if (cuda_device_) gpu_.push_back(read_gpu_contention(pci_bus_id_, idle_job_processes_));
}

std::uint64_t QualityProbe::own_jiffies() const {
    if (!stopped_ || !cpu_start_.value || !cpu_stop_.value || cpu_stop_.value->own_jiffies < cpu_start_.value->own_jiffies)
        return 0;
    return cpu_stop_.value->own_jiffies - cpu_start_.value->own_jiffies;
}

MeasurementQuality QualityProbe::quality(const std::vector<StepMetrics>& steps, std::uint64_t sibling_jiffies) const {
    MeasurementQuality q;
    std::vector<double> timed;
    for (const StepMetrics& s : steps) {
        if (s.phase == Phase::Timed) timed.push_back(s.step_ms);
    }
    q.cv = coefficient_of_variation(timed);
    q.cores = online_cores();
    q.threads = cpu_threads();
    if (!stopped_) {
        q.machine_note = "no timed step ran";
    } else if (!cpu_start_.value || !cpu_stop_.value) {
        q.machine_note = cpu_start_.value ? cpu_stop_.problem : cpu_start_.problem;
    } else {
        const double wall = std::chrono::duration<double>(stop_time_ - start_time_).count();
        const ProcReading<double> others =
            others_cpu_cores(*cpu_start_.value, *cpu_stop_.value, wall, clock_ticks_per_second(), sibling_jiffies);
        q.others_cpu_cores = others.value;
        q.machine_note = others.problem;
    }
    if (stopped_) {
        q.load_average = load_.value;
        if (!load_.value) {
            if (!q.machine_note.empty()) q.machine_note += "; ";
            q.machine_note += load_.problem;
        }
    }
    if (cuda_device_) {
        add_gpu_samples(q, gpu_);
    } else {
        q.gpu_note = "does not apply: a CPU run";
    }
    judge_quality(q);
    return q;
}

}  // namespace tewb

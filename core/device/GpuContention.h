#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tewb {

// What else is using a GPU and why its clocks are held back, read from NVML (the driver's
// libnvidia-ml.so.1, loaded at run time: the build never links it).
struct GpuContention {
    bool available = false;          // NVML answered
    std::string unavailable_reason;  // e.g. "libnvidia-ml.so.1 not found (no NVIDIA driver)"
    int other_processes = 0;         // compute processes on the device other than this one (and its job's launcher)
    std::vector<std::string> throttle_reasons;  // active clock-event reasons, in words
    std::optional<unsigned> sm_clock_mhz;
    std::optional<unsigned> max_sm_clock_mhz;
};

// `pci_bus_id` as CUDA gives it ("0000:1b:00.0"). Never throws; NVML is started once per process, on the
// first call, and shut down at exit. The clocks stay empty where the device does not report them; a failed
// process or clock-event query makes the whole answer unavailable, so a zero is never a guess.
// `also_ours`: processes that hold a context on the device without computing during the measurement and are not
// other work (a data-parallel rank's launcher, idle while its ranks train), by process id in this PID namespace.
GpuContention read_gpu_contention(const std::string& pci_bus_id, const std::vector<int>& also_ours = {});

// Every pid the process `pid` has, one per PID namespace /proc can see (its NSpid line), or just `pid` where /proc
// does not say.
std::vector<unsigned> pids_of_process(int pid);

// Whether a reason from GpuContention::throttle_reasons is part of normal operation (GPU idle, application
// clocks setting, display clock setting) rather than a disturbance of the measurement.
bool throttle_reason_is_benign(const std::string& reason);

struct ClockEventReason {
    std::uint64_t bit;  // nvmlClocksEventReason* (nvml.h)
    const char* words;
    bool benign;
};

// Every reason NVML defines, lowest bit first.
std::span<const ClockEventReason> clock_event_reasons();

// The words of each bit set in an nvmlDeviceGetCurrentClocksEventReasons mask, lowest bit first; a bit NVML
// did not define when this was written becomes "unknown reason 0x…" (never benign).
std::vector<std::string> decode_clock_event_reasons(std::uint64_t mask);

// The process records NVML writes (nvml.h): nvmlProcessInfo_v1_t for nvmlDeviceGetComputeRunningProcesses,
// nvmlProcessInfo_v2_t (same layout as nvmlProcessInfo_t) for its _v2 and _v3.
struct NvmlProcessInfoV1 {
    unsigned int pid;
    unsigned long long usedGpuMemory;
};
struct NvmlProcessInfoV2 {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
};

std::vector<unsigned> process_ids(std::span<const NvmlProcessInfoV1> infos);
std::vector<unsigned> process_ids(std::span<const NvmlProcessInfoV2> infos);

// Distinct processes in `listed` other than ours (`own`: each of our processes, this one first, by every pid it has,
// one per PID namespace). NVML lists host PIDs: inside a container's own PID namespace none of them is ours, so when
// `other_pid_namespace`, each of our processes that no listed pid matched is taken to be one of the listed (so each
// of ours is named once, and only where it holds a context on the device).
int count_other_processes(const std::vector<unsigned>& listed, const std::vector<std::vector<unsigned>>& own,
                          bool other_pid_namespace);

}  // namespace tewb

#include "core/device/GpuContention.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <fstream>
#include <sstream>

#include <dlfcn.h>
#include <unistd.h>

namespace tewb {

// The driver writes these records into our buffers: their layout must be nvml.h's exactly.
static_assert(offsetof(NvmlProcessInfoV1, pid) == 0 && offsetof(NvmlProcessInfoV1, usedGpuMemory) == 8 &&
              sizeof(NvmlProcessInfoV1) == 16);
static_assert(offsetof(NvmlProcessInfoV2, pid) == 0 && offsetof(NvmlProcessInfoV2, usedGpuMemory) == 8 &&
              offsetof(NvmlProcessInfoV2, gpuInstanceId) == 16 &&
              offsetof(NvmlProcessInfoV2, computeInstanceId) == 20 && sizeof(NvmlProcessInfoV2) == 24);

namespace {

// nvml.h's nvmlClocksEventReason* values (the older nvmlClocksThrottleReason* names have the same bits).
constexpr std::array<ClockEventReason, 9> kReasons{{
    {0x0000000000000001ULL, "GPU idle", true},
    {0x0000000000000002ULL, "application clocks setting", true},
    {0x0000000000000004ULL, "SW power cap", false},
    {0x0000000000000008ULL, "HW slowdown", false},
    {0x0000000000000010ULL, "sync boost", false},
    {0x0000000000000020ULL, "SW thermal slowdown", false},
    {0x0000000000000040ULL, "HW thermal slowdown", false},
    {0x0000000000000080ULL, "HW power brake slowdown", false},
    {0x0000000000000100ULL, "display clock setting", true},
}};

// The few NVML declarations used, from nvml.h: nvmlReturn_t and nvmlClockType_t are C enums (int-sized),
// nvmlDevice_t an opaque pointer.
using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlInsufficientSize = 7;
constexpr int kNvmlClockSm = 1;

using InitFn = NvmlReturn (*)();
using ShutdownFn = NvmlReturn (*)();
using ErrorStringFn = const char* (*)(NvmlReturn);
using HandleByBusIdFn = NvmlReturn (*)(const char*, NvmlDevice*);
using ProcessesV1Fn = NvmlReturn (*)(NvmlDevice, unsigned int*, NvmlProcessInfoV1*);
using ProcessesV2Fn = NvmlReturn (*)(NvmlDevice, unsigned int*, NvmlProcessInfoV2*);
using ReasonsFn = NvmlReturn (*)(NvmlDevice, unsigned long long*);
using ClockFn = NvmlReturn (*)(NvmlDevice, int, unsigned int*);

constexpr const char* kLibrary = "libnvidia-ml.so.1";

class Nvml {
public:
    Nvml() { failure_ = load(); }
    ~Nvml() {
        if (initialised_) shutdown_();
        if (library_ != nullptr) ::dlclose(library_);
    }
    Nvml(const Nvml&) = delete;
    Nvml& operator=(const Nvml&) = delete;

    const std::string& failure() const { return failure_; }
    GpuContention read(const std::string& pci_bus_id, const std::vector<int>& also_ours) const;

private:
    std::string load();
    template <typename Fn>
    bool bind(const char* name, Fn& fn) {
        fn = reinterpret_cast<Fn>(::dlsym(library_, name));
        return fn != nullptr;
    }
    std::string bind_all();
    std::string error_text(NvmlReturn status) const;
    std::string call_failed(NvmlReturn status, const std::string& bus_id, const char* function) const;
    NvmlReturn list_processes(NvmlDevice device, std::vector<unsigned>& pids) const;

    void* library_ = nullptr;
    bool initialised_ = false;
    std::string failure_;
    InitFn init_ = nullptr;
    ShutdownFn shutdown_ = nullptr;
    ErrorStringFn error_string_ = nullptr;
    HandleByBusIdFn handle_by_bus_id_ = nullptr;
    ProcessesV2Fn processes_v2_ = nullptr;  // _v3 or _v2: both write nvmlProcessInfo_v2_t's layout
    ProcessesV1Fn processes_v1_ = nullptr;
    const char* processes_name_ = "";
    ReasonsFn reasons_ = nullptr;
    const char* reasons_name_ = "";
    ClockFn clock_ = nullptr;
    ClockFn max_clock_ = nullptr;
};

std::string Nvml::load() {
    ::dlerror();
    library_ = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
    if (library_ == nullptr) {
        const char* error = ::dlerror();
        const std::string text = error != nullptr ? error : "";
        if (text.empty() || text.find("No such file") != std::string::npos)
            return std::string(kLibrary) + " not found (no NVIDIA driver)";
        return std::string(kLibrary) + " could not be loaded: " + text;
    }
    std::string missing = bind_all();
    if (!missing.empty()) return "NVML has no " + missing;
    const NvmlReturn status = init_();
    if (status != kNvmlSuccess) return std::string("NVML could not start: ").append(error_text(status));
    initialised_ = true;
    return {};
}

// The name of the first function the library lacks, or nothing when it has them all.
std::string Nvml::bind_all() {
    if (!bind("nvmlInit_v2", init_)) return "nvmlInit_v2";
    if (!bind("nvmlShutdown", shutdown_)) return "nvmlShutdown";
    if (!bind("nvmlErrorString", error_string_)) return "nvmlErrorString";
    if (!bind("nvmlDeviceGetHandleByPciBusId_v2", handle_by_bus_id_)) return "nvmlDeviceGetHandleByPciBusId_v2";
    for (const char* name : {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"}) {
        if (bind(name, processes_v2_)) {
            processes_name_ = name;
            break;
        }
    }
    if (processes_v2_ == nullptr) {
        if (!bind("nvmlDeviceGetComputeRunningProcesses", processes_v1_))
            return "nvmlDeviceGetComputeRunningProcesses (_v3, _v2 or the first)";
        processes_name_ = "nvmlDeviceGetComputeRunningProcesses";
    }
    for (const char* name : {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"}) {
        if (bind(name, reasons_)) {
            reasons_name_ = name;
            break;
        }
    }
    if (reasons_ == nullptr) return "nvmlDeviceGetCurrentClocksEventReasons (nor its older ThrottleReasons name)";
    if (!bind("nvmlDeviceGetClockInfo", clock_)) return "nvmlDeviceGetClockInfo";
    if (!bind("nvmlDeviceGetMaxClockInfo", max_clock_)) return "nvmlDeviceGetMaxClockInfo";
    return {};
}

std::string Nvml::error_text(NvmlReturn status) const {
    const char* text = error_string_ != nullptr ? error_string_(status) : nullptr;
    if (text != nullptr && *text != '\0') return text;
    return std::string("error ").append(std::to_string(status));
}

std::string Nvml::call_failed(NvmlReturn status, const std::string& bus_id, const char* function) const {
    std::string text = "NVML: ";
    text += error_text(status);
    text += " for device ";
    text += bus_id;
    text += " (";
    text += function;
    text += ')';
    return text;
}

// The list can grow between asking for its size and reading it: asked again, a few times, with room to spare.
template <typename Info>
NvmlReturn fetch_processes(NvmlReturn (*fn)(NvmlDevice, unsigned int*, Info*), NvmlDevice device,
                           std::vector<Info>& infos) {
    unsigned int count = 0;
    infos.clear();
    NvmlReturn status = fn(device, &count, nullptr);
    for (int attempt = 0; status == kNvmlInsufficientSize && attempt < 4; ++attempt) {
        infos.assign(static_cast<std::size_t>(count) + 8, Info{});
        count = static_cast<unsigned int>(infos.size());
        status = fn(device, &count, infos.data());
    }
    if (status != kNvmlSuccess) return status;
    infos.resize(std::min<std::size_t>(count, infos.size()));
    return status;
}

NvmlReturn Nvml::list_processes(NvmlDevice device, std::vector<unsigned>& pids) const {
    if (processes_v2_ != nullptr) {
        std::vector<NvmlProcessInfoV2> infos;
        const NvmlReturn status = fetch_processes(processes_v2_, device, infos);
        pids = process_ids(infos);
        return status;
    }
    std::vector<NvmlProcessInfoV1> infos;
    const NvmlReturn status = fetch_processes(processes_v1_, device, infos);
    pids = process_ids(infos);
    return status;
}


// The initial PID namespace has a fixed inode (PROC_PID_INIT_INO in the kernel).
bool in_other_pid_namespace() {
    std::array<char, 64> target{};
    const ssize_t length = ::readlink("/proc/self/ns/pid", target.data(), target.size() - 1);
    if (length <= 0) return false;
    return std::string(target.data(), static_cast<std::size_t>(length)) != "pid:[4026531836]";
}

GpuContention Nvml::read(const std::string& pci_bus_id, const std::vector<int>& also_ours) const {
    GpuContention out;
    NvmlDevice device = nullptr;
    NvmlReturn status = handle_by_bus_id_(pci_bus_id.c_str(), &device);
    if (status != kNvmlSuccess) {
        out.unavailable_reason = call_failed(status, pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2");
        return out;
    }
    std::vector<unsigned> pids;
    status = list_processes(device, pids);
    if (status != kNvmlSuccess) {
        out.unavailable_reason = call_failed(status, pci_bus_id, processes_name_);
        return out;
    }
    unsigned long long mask = 0;
    status = reasons_(device, &mask);
    if (status != kNvmlSuccess) {
        out.unavailable_reason = call_failed(status, pci_bus_id, reasons_name_);
        return out;
    }
    out.available = true;
    std::vector<std::vector<unsigned>> ours{pids_of_process(static_cast<int>(::getpid()))};
    for (const int pid : also_ours) ours.push_back(pids_of_process(pid));
    out.other_processes = count_other_processes(pids, ours, in_other_pid_namespace());
    out.throttle_reasons = decode_clock_event_reasons(mask);
    unsigned int mhz = 0;
    if (clock_(device, kNvmlClockSm, &mhz) == kNvmlSuccess) out.sm_clock_mhz = mhz;
    if (max_clock_(device, kNvmlClockSm, &mhz) == kNvmlSuccess) out.max_sm_clock_mhz = mhz;
    return out;
}

template <typename Info>
std::vector<unsigned> pids_of(std::span<const Info> infos) {
    std::vector<unsigned> pids;
    pids.reserve(infos.size());
    for (const Info& info : infos) pids.push_back(info.pid);
    return pids;
}

std::string hex(std::uint64_t value) {
    std::ostringstream out;
    out << "0x" << std::hex << value;
    return out.str();
}

}  // namespace

std::vector<unsigned> pids_of_process(int pid) {
    std::vector<unsigned> pids{static_cast<unsigned>(pid)};
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("NSpid:", 0) != 0) continue;
        std::istringstream fields(line.substr(6));
        unsigned each = 0;
        while (fields >> each) pids.push_back(each);
        break;
    }
    return pids;
}

GpuContention read_gpu_contention(const std::string& pci_bus_id, const std::vector<int>& also_ours) {
    if (pci_bus_id.empty()) {
        GpuContention out;
        out.unavailable_reason = "no PCI bus id given for the GPU";
        return out;
    }
    static const Nvml nvml;  // loaded and started once; C++ makes the first use thread-safe
    if (!nvml.failure().empty()) {
        GpuContention out;
        out.unavailable_reason = nvml.failure();
        return out;
    }
    return nvml.read(pci_bus_id, also_ours);
}

std::span<const ClockEventReason> clock_event_reasons() { return kReasons; }

std::vector<std::string> decode_clock_event_reasons(std::uint64_t mask) {
    std::vector<std::string> words;
    for (int shift = 0; shift < 64; ++shift) {
        const std::uint64_t bit = std::uint64_t{1} << shift;
        if ((mask & bit) == 0) continue;
        const auto known = std::find_if(kReasons.begin(), kReasons.end(),
                                        [bit](const ClockEventReason& reason) { return reason.bit == bit; });
        if (known != kReasons.end()) {
            words.emplace_back(known->words);
        } else {
            words.push_back(std::string("unknown reason ").append(hex(bit)));
        }
    }
    return words;
}

bool throttle_reason_is_benign(const std::string& reason) {
    return std::any_of(kReasons.begin(), kReasons.end(), [&reason](const ClockEventReason& known) {
        return known.benign && reason == known.words;
    });
}

std::vector<unsigned> process_ids(std::span<const NvmlProcessInfoV1> infos) { return pids_of(infos); }
std::vector<unsigned> process_ids(std::span<const NvmlProcessInfoV2> infos) { return pids_of(infos); }

int count_other_processes(const std::vector<unsigned>& listed, const std::vector<std::vector<unsigned>>& own,
                          bool other_pid_namespace) {
    std::vector<unsigned> distinct = listed;
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    const auto owns = [](const std::vector<unsigned>& pids, unsigned pid) {
        return std::find(pids.begin(), pids.end(), pid) != pids.end();
    };
    const auto is_ours = [&](unsigned pid) {
        return std::any_of(own.begin(), own.end(), [&](const std::vector<unsigned>& process) { return owns(process, pid); });
    };
    auto others = static_cast<int>(std::count_if(distinct.begin(), distinct.end(), [&](unsigned pid) { return !is_ours(pid); }));
    if (other_pid_namespace) {
        const auto unmatched = static_cast<int>(std::count_if(own.begin(), own.end(), [&](const std::vector<unsigned>& process) {
            return std::none_of(distinct.begin(), distinct.end(), [&](unsigned pid) { return owns(process, pid); });
        }));
        others -= std::min(others, unmatched);
    }
    return others;
}

}  // namespace tewb

#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tewb {

struct ComputeCapability {
    int major = 0;
    int minor = 0;

    std::string to_string() const { return std::to_string(major) + "." + std::to_string(minor); }
    friend bool operator==(const ComputeCapability&, const ComputeCapability&) = default;
    friend auto operator<=>(const ComputeCapability&, const ComputeCapability&) = default;
};

// Everything detection found out. GPU fields are empty when there is no usable GPU; `gpu_error` then
// says why, in the CUDA runtime's own words.
struct DeviceInfo {
    std::string gpu_name;
    std::optional<ComputeCapability> compute_capability;
    int sm_count = 0;
    std::uint64_t memory_total_bytes = 0;
    std::uint64_t memory_free_bytes = 0;
    int gpu_count = 0;
    std::string gpu_error;

    std::string driver_version;  // kernel module version and the CUDA version the driver supports
    std::string cuda_runtime_version;
    std::string cublaslt_version;
    std::string cublaslt_library;  // the file loaded: the torch wheel's copy (the one LibTorch uses) or a toolkit's
    std::string libtorch_version;

    std::string cpu_model;
    int cpu_threads = 0;

    // What this build can run on the GPU: the fused CUDA kernels (built with nvcc and a CUDA LibTorch), and
    // cuBLASLt's block-scaled FP8 GEMMs (Hopper; asked of cuBLASLt at detection). Not part of a record.
    bool fused_cuda_kernels = false;
    bool block_fp8_gemms = false;

    bool has_gpu() const { return compute_capability.has_value(); }
};

// Queries the CUDA runtime (through the kernels library) and the host. Never throws. The GPU fields describe CUDA
// device `device_index` (a data-parallel rank's LOCAL_RANK; device 0 elsewhere), the only one the query makes a
// context on (free memory needs one): a rank on GPU 3 does not also sit on GPU 0.
DeviceInfo detect_device(int device_index = 0);

// "13.0" from 13000.
std::string format_cuda_version(int version);

}  // namespace tewb

#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tewb::kernels {

struct CudaDeviceProperties {
    std::string name;
    int compute_capability_major = 0;
    int compute_capability_minor = 0;
    int sm_count = 0;
    std::size_t memory_total_bytes = 0;
    std::size_t memory_free_bytes = 0;  // queried for query_cuda's context_device only (it needs a context)
};

// What the CUDA runtime reports. Never throws: a missing driver, an old driver or no device leave
// `devices` empty and put the runtime's own error text in `error`.
struct CudaQuery {
    int driver_api_version = 0;  // e.g. 13000 for CUDA 13.0; 0 when no driver is installed
    int runtime_version = 0;     // the CUDA runtime this build loaded
    std::size_t cublaslt_version = 0;
    std::string cublaslt_library;  // the file the process loaded it from (LibTorch's wheel or a toolkit)
    std::vector<CudaDeviceProperties> devices;
    std::string error;
};

// Free memory needs a context on its device, and NVML lists a process on every device it holds one on: only
// `context_device` (the GPU the process will run on; a data-parallel rank's LOCAL_RANK) gets one, and is left the
// current device. No context anywhere when `context_device` is not a device of this machine.
CudaQuery query_cuda(int context_device = 0);

}  // namespace tewb::kernels

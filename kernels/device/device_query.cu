#include "tewb_kernels/device_query.h"

#include <link.h>

#include <cstring>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

namespace tewb::kernels {

namespace {
std::string describe(cudaError_t status) {
    return std::string(cudaGetErrorString(status)) + " (" + cudaGetErrorName(status) + ")";
}

// The path of the loaded shared object whose file name starts with `stem` (one process holds one
// libcublasLt.so.13: the first one the loader found wins for LibTorch and for us).
std::string loaded_library(const char* stem) {
    struct Search {
        const char* stem;
        std::string path;
    } search{stem, {}};
    dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* data) {
            auto* s = static_cast<Search*>(data);
            const char* name = info->dlpi_name;
            if (name == nullptr || *name == '\0') return 0;
            const char* slash = std::strrchr(name, '/');
            const char* file = slash != nullptr ? slash + 1 : name;
            if (std::strncmp(file, s->stem, std::strlen(s->stem)) != 0) return 0;
            s->path = name;
            return 1;
        },
        &search);
    return search.path;
}
}  // namespace

CudaQuery query_cuda(int context_device) {
    CudaQuery query;
    cudaRuntimeGetVersion(&query.runtime_version);
    query.cublaslt_version = cublasLtGetVersion();
    query.cublaslt_library = loaded_library("libcublasLt.so");
    if (cudaDriverGetVersion(&query.driver_api_version) != cudaSuccess) {
        query.driver_api_version = 0;
    }

    int count = 0;
    const cudaError_t count_status = cudaGetDeviceCount(&count);
    if (count_status != cudaSuccess) {
        query.error = describe(count_status);
        cudaGetLastError();  // clear the sticky-free error so later CUDA users start clean
        return query;
    }
    for (int index = 0; index < count; ++index) {
        cudaDeviceProp props{};
        cudaError_t status = cudaGetDeviceProperties(&props, index);
        if (status != cudaSuccess) {
            query.error = "device " + std::to_string(index) + ": " + describe(status);
            continue;
        }
        CudaDeviceProperties device;
        device.name = props.name;
        device.compute_capability_major = props.major;
        device.compute_capability_minor = props.minor;
        device.sm_count = props.multiProcessorCount;
        device.memory_total_bytes = props.totalGlobalMem;
        // Only the device the process runs on gets a context (since CUDA 12 cudaSetDevice makes one at once), so a
        // query on a multi-GPU server claims no memory on the other GPUs and a rank shows up on its own GPU only. A
        // failure leaves 0 and says why.
        if (index == context_device && cudaSetDevice(index) == cudaSuccess) {
            std::size_t free_bytes = 0;
            std::size_t total_bytes = 0;
            status = cudaMemGetInfo(&free_bytes, &total_bytes);
            if (status == cudaSuccess) {
                device.memory_free_bytes = free_bytes;
            } else {
                query.error = "device " + std::to_string(index) + " free memory: " + describe(status);
                cudaGetLastError();
            }
        }
        query.devices.push_back(device);
    }
    return query;
}

}  // namespace tewb::kernels

#include "core/device/DeviceInfo.h"

#include <fstream>
#include <regex>
#include <thread>

#include "core/device/Capability.h"

#include <torch/version.h>

#ifdef TEWB_HAVE_KERNELS
#include "tewb_kernels/device_query.h"
#endif
#ifdef TEWB_FUSED_CUDA
#include "tewb_kernels/gemm.h"
#endif

namespace tewb {

namespace {

std::string read_cpu_model() {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line)) {
        if (line.rfind("model name", 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos) {
                return line.substr(line.find_first_not_of(' ', colon + 1));
            }
        }
    }
    return "unknown CPU";
}

// The display driver's version, as nvidia-smi shows it, from the kernel module.
std::string read_kernel_module_version() {
    std::ifstream version_file("/proc/driver/nvidia/version");
    std::string line;
    if (!std::getline(version_file, line)) {
        return {};
    }
    static const std::regex pattern(R"(Kernel Module\s+([0-9][0-9.]*))");
    std::smatch match;
    return std::regex_search(line, match, pattern) ? match[1].str() : std::string{};
}

}  // namespace

std::string format_cuda_version(int version) {
    if (version <= 0) {
        return {};
    }
    return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

DeviceInfo detect_device([[maybe_unused]] int device_index) {
    DeviceInfo info;
    info.libtorch_version = TORCH_VERSION;
    info.cpu_model = read_cpu_model();
    info.cpu_threads = static_cast<int>(std::thread::hardware_concurrency());

#ifdef TEWB_HAVE_KERNELS
    const kernels::CudaQuery query = kernels::query_cuda(device_index);
    info.cuda_runtime_version = format_cuda_version(query.runtime_version);
    if (query.cublaslt_version > 0) {
        const std::size_t v = query.cublaslt_version;  // e.g. 130100 -> 13.1.0
        info.cublaslt_version =
            std::to_string(v / 10000) + "." + std::to_string((v % 10000) / 100) + "." + std::to_string(v % 100);
    }
    info.cublaslt_library = query.cublaslt_library;
    const std::string module_version = read_kernel_module_version();
    const std::string driver_cuda = format_cuda_version(query.driver_api_version);
    if (!module_version.empty() || !driver_cuda.empty()) {
        info.driver_version = module_version.empty() ? "CUDA " + driver_cuda
                              : driver_cuda.empty()  ? module_version
                                                     : module_version + " (CUDA " + driver_cuda + ")";
    }
    info.gpu_count = static_cast<int>(query.devices.size());
    if (!query.devices.empty()) {
        const bool present = device_index >= 0 && device_index < static_cast<int>(query.devices.size());
        const int described = present ? device_index : 0;  // a rank placed past the GPUs is refused when it resolves
        const kernels::CudaDeviceProperties& gpu = query.devices[static_cast<std::size_t>(described)];
        info.gpu_name = gpu.name;
        info.compute_capability = ComputeCapability{gpu.compute_capability_major, gpu.compute_capability_minor};
        info.sm_count = gpu.sm_count;
        info.memory_total_bytes = gpu.memory_total_bytes;
        info.memory_free_bytes = gpu.memory_free_bytes;
#ifdef TEWB_FUSED_CUDA
        info.fused_cuda_kernels = true;
        if (may_run_block_gemms(*info.compute_capability)) {
            try {
                info.block_fp8_gemms = present && kernels::block_gemm_supported(described);
            } catch (const std::exception&) {
                info.block_fp8_gemms = false;  // detection never throws: no answer means no native block GEMMs
            }
        }
#endif
    } else {
        info.gpu_error = query.error.empty() ? "no CUDA device found" : query.error;
    }
#else
    info.gpu_error = "this build has no CUDA support (configured without nvcc or with TEWB_BUILD_KERNELS=OFF)";
#endif
    return info;
}

}  // namespace tewb

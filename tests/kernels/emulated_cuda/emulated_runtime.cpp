// The emulated CUDA's state (emulated_cuda.h, cuda_runtime_api.h) and the kernels library's CUDA error helpers.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string_view>

#include "cuda_runtime_api.h"
#include "cublasLt.h"

thread_local EmulatedDim3 threadIdx, blockIdx;
EmulatedDim3 blockDim, gridDim;

namespace emulated {

thread_local Block* current_block = nullptr;
thread_local unsigned char* dynamic_shared = nullptr;

namespace {
std::mutex limits_mutex;
std::map<const void*, int> limits;
}  // namespace

cudaError_t set_max_dynamic_shared(const void* kernel, int bytes) {
    const std::lock_guard<std::mutex> lock(limits_mutex);
    limits[kernel] = bytes;
    return cudaSuccess;
}

int max_dynamic_shared(const void* kernel) {
    const std::lock_guard<std::mutex> lock(limits_mutex);
    const auto found = limits.find(kernel);
    return found == limits.end() ? 48 * 1024 : found->second;
}

}  // namespace emulated

namespace tewb::kernels::detail {

void check_cuda(cudaError_t status, std::string_view call, std::string_view operation) {
    if (status == cudaSuccess) return;
    std::fprintf(stderr, "%.*s: %.*s failed\n", static_cast<int>(call.size()), call.data(), static_cast<int>(operation.size()),
                 operation.data());
    std::abort();
}

void check_last_launch(std::string_view) {}

}  // namespace tewb::kernels::detail

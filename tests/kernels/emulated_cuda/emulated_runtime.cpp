// The emulated CUDA's state (emulated_cuda.h, cuda_runtime_api.h) and the kernels library's CUDA error helpers.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string_view>

#include "common/host_numbers.h"
#include "cuda_fp16.h"
#include "cuda_fp8.h"
#include "cuda_runtime_api.h"
#include "cublasLt.h"

// CUDA's conversion, as the host twins write it (common/host_numbers.h; tst_host_numbers holds it to CUDA's, bit for bit).
std::uint8_t __nv_cvt_float_to_fp8(float v, __nv_saturation_t, __nv_fp8_interpretation_t type) {
    return tewb::kernels::detail::float_to_fp8(v, type == __NV_E4M3 ? tewb::kernels::Fp8Type::E4M3 : tewb::kernels::Fp8Type::E5M2);
}
// Referenced by common/elementwise.cuh's loads and stores of a dtype the emulated kernels never take.
float __half2float(__half) {
    std::fprintf(stderr, "emulated CUDA: float16 is not emulated\n");
    std::abort();
}
__half __float2half(float) {
    std::fprintf(stderr, "emulated CUDA: float16 is not emulated\n");
    std::abort();
}

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

#include "common/check.h"

#include <atomic>
#include <string>

#include "tewb_kernels/kernel_error.h"
#include "tewb_kernels/launch_count.h"

namespace tewb::kernels {

namespace {

std::atomic<std::uint64_t> g_launches{0};

}  // namespace

std::uint64_t launch_count() {
    return g_launches.load(std::memory_order_relaxed);
}

}  // namespace tewb::kernels

namespace tewb::kernels::detail {

void fail(std::string_view call, std::string_view what) {
    throw KernelError(std::string(call) + ": " + std::string(what));
}

void check_cuda(cudaError_t status, std::string_view call, std::string_view operation) {
    if (status != cudaSuccess) {
        fail(call, std::string(operation) + " failed: " + cudaGetErrorString(status) + " (" + cudaGetErrorName(status) + ")");
    }
}

void check_cublas(cublasStatus_t status, std::string_view call, std::string_view operation) {
    if (status != CUBLAS_STATUS_SUCCESS) {
        fail(call, std::string(operation) + " failed: cuBLAS status " + std::to_string(static_cast<int>(status)));
    }
}

void check_last_launch(std::string_view call) {
    note_launch();
    check_cuda(cudaGetLastError(), call, "kernel launch");
}

void note_launch() {
    g_launches.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace tewb::kernels::detail

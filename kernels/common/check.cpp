#include "common/check.h"

#include <string>

#include "tewb_kernels/kernel_error.h"

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
    check_cuda(cudaGetLastError(), call, "kernel launch");
}

}  // namespace tewb::kernels::detail

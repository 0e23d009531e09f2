#include "common/check.h"

#include <string>

namespace tewb::kernels::detail {

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

}  // namespace tewb::kernels::detail

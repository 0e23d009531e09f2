#pragma once

#include <string_view>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

namespace tewb::kernels::detail {

[[noreturn]] void fail(std::string_view call, std::string_view what);
void check_cuda(cudaError_t status, std::string_view call, std::string_view operation);
void check_cublas(cublasStatus_t status, std::string_view call, std::string_view operation);
// After a launch: a bad configuration shows up here, not at the launch statement. Counts the launch
// (launch_count.h).
void check_last_launch(std::string_view call);
// Counts a launch that check_last_launch does not see (a cuBLASLt matmul).
void note_launch();

}  // namespace tewb::kernels::detail

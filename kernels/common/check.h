#pragma once

#include <string_view>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "common/fail.h"

namespace tewb::kernels::detail {

void check_cuda(cudaError_t status, std::string_view call, std::string_view operation);
void check_cublas(cublasStatus_t status, std::string_view call, std::string_view operation);
// After a launch: a bad configuration shows up here, not at the launch statement. Counts the launch
// (launch_count.h).
void check_last_launch(std::string_view call);

}  // namespace tewb::kernels::detail

#pragma once

#include <cstddef>

#include "tewb_kernels/dtype.h"

namespace tewb::kernels::detail {

// abs_max's argument rules, one copy for the kernel (amax_api.cpp) and the host implementation (amax_host.cpp).
void check_abs_max_arguments(const char* call, const void* x, DType dtype, std::size_t n, const float* amax_out);

}  // namespace tewb::kernels::detail

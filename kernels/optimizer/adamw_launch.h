#pragma once

#include <string_view>
#include <vector>

#include <cuda_runtime_api.h>

#include "optimizer/adamw_math.h"
#include "tewb_kernels/adamw_types.h"

namespace tewb::kernels::detail {

// The tensors that have elements, already checked by adamw_api.cpp; adamw_launches(work.size()) launches.
void launch_adamw(const std::vector<AdamWTensor>& work, float* step, const AdamWScalars& scalars, cudaStream_t stream,
                  std::string_view call);

}  // namespace tewb::kernels::detail

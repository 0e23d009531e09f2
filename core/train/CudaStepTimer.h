#pragma once

#include <cstdint>
#include <memory>

#include <c10/core/Device.h>

namespace tewb {

class StepTimer;

// The GPU StepTimer (StepTimer.h). Throws std::logic_error in builds whose LibTorch has no CUDA.
std::unique_ptr<StepTimer> make_cuda_step_timer(const c10::Device& device, int total_steps, std::int64_t fp8_rows);

}  // namespace tewb

#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tewb {

// Published dense (no sparsity) tensor-core peaks, used as the MFU denominator.
struct PeakThroughput {
    std::string device;  // the table row that matched
    double bf16_tflops = 0;
    double fp8_tflops = 0;   // 0 where the device has no FP8 tensor cores
    double fp32_tflops = 0;  // plain FP32 (CUDA cores)
};

// Matches the CUDA device name against the table; empty for unknown devices and CPUs.
std::optional<PeakThroughput> find_peak_throughput(std::string_view gpu_name);

}  // namespace tewb

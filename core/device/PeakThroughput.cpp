#include "core/device/PeakThroughput.h"

#include <array>

namespace tewb {

namespace {

struct Row {
    std::string_view name_contains;
    PeakThroughput peak;
};

// First match wins, so more specific names come first. Vendor datasheet figures, dense.
const std::array<Row, 14> kTable{{
    {"H200", {"H200", 989.0, 1979.0, 67.0}},
    {"H100 PCIe", {"H100 PCIe", 756.0, 1513.0, 51.0}},
    {"H100", {"H100 SXM", 989.0, 1979.0, 67.0}},
    {"GH200", {"GH200", 989.0, 1979.0, 67.0}},
    {"B200", {"B200", 2250.0, 4500.0, 80.0}},
    {"A100", {"A100", 312.0, 0.0, 19.5}},
    {"A10G", {"A10G", 70.0, 0.0, 31.2}},
    {"A10", {"A10", 125.0, 0.0, 31.2}},
    {"L40S", {"L40S", 362.0, 733.0, 91.6}},
    {"L4", {"L4", 121.0, 242.0, 30.3}},
    {"RTX 5090", {"RTX 5090", 209.5, 419.0, 104.8}},
    {"RTX 4090", {"RTX 4090", 165.2, 330.3, 82.6}},
    {"V100", {"V100", 125.0, 0.0, 15.7}},  // FP16 tensor cores; V100 has no BF16
    {"T4", {"T4", 65.0, 0.0, 8.1}},        // FP16 tensor cores; T4 has no BF16
}};

}  // namespace

std::optional<PeakThroughput> find_peak_throughput(std::string_view gpu_name) {
    if (gpu_name.empty()) {
        return std::nullopt;
    }
    for (const Row& row : kTable) {
        if (gpu_name.find(row.name_contains) != std::string_view::npos) {
            return row.peak;
        }
    }
    return std::nullopt;
}

}  // namespace tewb

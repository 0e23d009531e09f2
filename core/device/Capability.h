#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/device/DeviceInfo.h"

namespace tewb {

// fp8: FP8 tensor cores (CC >= 8.9); te: fused BF16 kernels (8.0 <= CC < 8.9); fallback: plain LibTorch.
enum class Mode { Fp8, Te, Fallback };

struct Capability {
    Mode mode = Mode::Fallback;
    bool te_capable = false;
    bool fp8_capable = false;
    // One line per badge, in the order TE capable, FP8 capable, fallback.
    std::string te_reason;
    std::string fp8_reason;
    std::string fallback_reason;  // empty when not in fallback

    std::vector<std::string> reasons() const;
};

constexpr ComputeCapability kTeMinimum{8, 0};
constexpr ComputeCapability kFp8Minimum{8, 9};

// Pure: the same inputs always give the same answer. `no_gpu_reason` is used when `cc` is empty.
Capability classify(std::optional<ComputeCapability> cc, std::string_view no_gpu_reason);
Capability classify(const DeviceInfo& device);

std::string_view to_string(Mode mode);
Mode parse_mode(std::string_view what, std::string_view text);  // ConfigError naming `what`

}  // namespace tewb

#include "core/train/ComparePlan.h"

#include "core/common/Error.h"

namespace tewb {

std::vector<PlannedRun> plan_comparison(const RunConfig& base, const DeviceInfo& device) {
    const bool cuda = base.device == DeviceKind::Cuda || (base.device == DeviceKind::Auto && device.has_gpu());
    const DeviceKind kind = cuda ? DeviceKind::Cuda : DeviceKind::Cpu;
    const auto make = [&](Backend backend, Precision precision, const char* label) {
        RunConfig config = base;
        config.device = kind;
        config.backend = backend;
        config.precision = precision;
        config.name = std::string(label) + (cuda ? "" : " (cpu)");
        return config;
    };

    std::vector<PlannedRun> plan;
    const Precision baseline_precision = cuda ? Precision::Bf16 : Precision::Fp32;
    const Precision other_precision = cuda ? Precision::Fp32 : Precision::Bf16;
    plan.push_back(
        {make(Backend::Torch, baseline_precision, cuda ? "torch bf16 (baseline)" : "torch fp32 (baseline)"), std::nullopt});
    plan.push_back({make(Backend::Torch, other_precision, cuda ? "torch fp32" : "torch bf16"), std::nullopt});
    plan.push_back({make(Backend::Te, Precision::Bf16, "te bf16"), std::nullopt});
    plan.push_back({make(Backend::Te, Precision::Fp8, "te fp8"), std::nullopt});

    for (PlannedRun& row : plan) {
        try {
            resolve(row.config, device);
        } catch (const ConfigError& e) {
            row.skip_reason = e.what();
        }
    }
    return plan;
}

}  // namespace tewb

#include "core/config/ComparePlan.h"

#include "core/common/Error.h"

namespace tewb {

std::vector<PlannedRun> plan_comparison(const RunConfig& base, const DeviceInfo& device) {
    RunConfig shared = base;  // what every row takes from base; backend, precision and inspection are per row
    shared.backend = Backend::Torch;
    shared.precision = Precision::Auto;
    shared.inspect_fp8 = false;
    validate(shared);
    const bool cuda = base.device == DeviceKind::Cuda || (base.device == DeviceKind::Auto && device.has_gpu());
    const DeviceKind kind = cuda ? DeviceKind::Cuda : DeviceKind::Cpu;
    enum class Role { Baseline, Variant };
    const auto make = [&](Backend backend, Precision precision, Role role) {
        RunConfig config = base;
        config.device = kind;
        config.backend = backend;
        config.precision = precision;
        config.inspect_fp8 = base.inspect_fp8 && precision == Precision::Fp8;
        config.name = std::string(to_string(backend)) + " " + std::string(to_string(precision)) + (cuda ? "" : " cpu") +
                      (role == Role::Baseline ? " (baseline)" : "");
        return config;
    };

    std::vector<PlannedRun> plan;
    const Precision baseline_precision = cuda ? Precision::Bf16 : Precision::Fp32;
    const Precision other_precision = cuda ? Precision::Fp32 : Precision::Bf16;
    plan.push_back({make(Backend::Torch, baseline_precision, Role::Baseline), std::nullopt});
    plan.push_back({make(Backend::Torch, other_precision, Role::Variant), std::nullopt});
    if (!cuda) {  // the like-for-like row of the CPU baseline
        plan.push_back({make(Backend::Te, Precision::Fp32, Role::Variant), std::nullopt});
    }
    plan.push_back({make(Backend::Te, Precision::Bf16, Role::Variant), std::nullopt});
    plan.push_back({make(Backend::Te, Precision::Fp8, Role::Variant), std::nullopt});

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

#include "core/config/ComparePlan.h"

#include "core/common/Error.h"
#include "core/config/RunFacts.h"

namespace tewb {

std::vector<PlannedRun> plan_comparison(const RunConfig& base, const DeviceInfo& device) {
    RunConfig shared = base;  // what every row takes from base; backend, precision and inspection are per row
    shared.backend = Backend::Torch;
    shared.precision = Precision::Auto;
    shared.inspect_fp8 = false;
    shared.te_impl = TeImpl::Auto;
    validate(shared);
    const DeviceKind kind = run_device(base.device, device);
    const bool cuda = kind == DeviceKind::Cuda;
    enum class Role { Baseline, Variant };
    enum class Graph { Off, On };
    const auto make = [&](Backend backend, Precision precision, Role role, Graph graph) {
        RunConfig config = base;
        config.device = kind;
        config.backend = backend;
        config.precision = precision;
        config.cuda_graph = graph == Graph::On;
        config.inspect_fp8 = base.inspect_fp8 && precision == Precision::Fp8;
        config.te_impl = backend == Backend::Te ? base.te_impl : TeImpl::Auto;  // torch has no te implementation
        config.name = std::string(base.model.arch == Arch::Llama ? "llama " : "") + std::string(to_string(backend)) + " " + std::string(to_string(precision)) + (cuda ? "" : " cpu") +
                      (graph == Graph::On ? " graph" : "") + (role == Role::Baseline ? " (baseline)" : "");
        return config;
    };

    // On a GPU with graphs asked for (the default), each configuration also runs as one CUDA graph per
    // step, next to its eager row, so the graph's gain shows apart from the kernels'. The baseline stays eager.
    const bool graphs = cuda && base.cuda_graph;
    std::vector<PlannedRun> plan;
    const auto add = [&](Backend backend, Precision precision, Role role, bool with_graph) {
        plan.push_back({make(backend, precision, role, Graph::Off), std::nullopt});
        if (with_graph && graphs) plan.push_back({make(backend, precision, Role::Variant, Graph::On), std::nullopt});
    };
    const Precision baseline = baseline_precision(kind);
    const Precision other_precision = baseline == Precision::Bf16 ? Precision::Fp32 : Precision::Bf16;
    add(Backend::Torch, baseline, Role::Baseline, true);
    add(Backend::Torch, other_precision, Role::Variant, false);
    if (!cuda) {  // the like-for-like row of the CPU baseline
        add(Backend::Te, Precision::Fp32, Role::Variant, false);
    }
    add(Backend::Te, Precision::Bf16, Role::Variant, true);
    add(Backend::Te, Precision::Fp8, Role::Variant, true);

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

#include "core/config/RunFacts.h"

#include "core/device/Capability.h"

namespace tewb {

DeviceKind run_device(DeviceKind kind, const DeviceInfo& device) {
    if (kind != DeviceKind::Auto) return kind;
    return device.has_gpu() ? DeviceKind::Cuda : DeviceKind::Cpu;
}

Precision baseline_precision(DeviceKind device) {
    return device == DeviceKind::Cuda ? Precision::Bf16 : Precision::Fp32;
}

ComputeDtype compute_dtype(Precision precision) {
    return precision == Precision::Bf16 || precision == Precision::Fp8 ? ComputeDtype::BFloat16 : ComputeDtype::Float32;
}

RunFacts run_facts(const RunConfig& config, const DeviceInfo& device) {
    RunFacts facts;
    facts.device = run_device(config.device, device);
    facts.baseline = baseline_precision(facts.device);
    facts.precision = config.precision == Precision::Auto ? facts.baseline : config.precision;
    facts.compute = compute_dtype(facts.precision);
    const bool cuda = facts.device == DeviceKind::Cuda;
    facts.block_gemms_native = cuda && device.block_fp8_gemms;
    if (config.backend == Backend::Te) {
        facts.te_ops = choose_ops(config.te_impl, device.fused_cuda_kernels, cuda, cuda ? device.compute_capability : std::nullopt);
        // The microscaling recipes run on the reference ops unless --te-impl fused asks for their cast kernels: those
        // have not yet run on a GPU (their self-test rows wait for one), so `auto` does not pick them.
        if (facts.precision == Precision::Fp8 && is_microscaling(config.fp8.scaling) && config.te_impl == TeImpl::Auto) {
            facts.te_ops = OpsKind::Reference;
        }
        facts.fp8_emulated = facts.precision == Precision::Fp8 &&
                             fp8_gemms_emulated(*facts.te_ops, config.fp8.scaling, facts.block_gemms_native);
    }
    return facts;
}

}  // namespace tewb

#include "core/config/Availability.h"

#include "core/config/RunFacts.h"
#include "core/device/Capability.h"

namespace tewb {

Availability device_availability(DeviceKind kind, const DeviceInfo& device) {
    if (kind == DeviceKind::Cuda && !device.has_gpu()) {
        // On a machine without an NVIDIA driver the runtime's error reads "driver version is insufficient": not quoted.
        if (cpu_machine(device)) return {false, "--device cuda: no usable CUDA device: this machine has no NVIDIA GPU; allowed here: auto|cpu"};
        return {false, "--device cuda: no usable CUDA device (" + device.gpu_error + "); allowed here: auto|cpu"};
    }
    return {};
}

Availability precision_availability(Precision precision, Backend backend, DeviceKind kind, const DeviceInfo& device) {
    if (precision != Precision::Fp8) {
        return {};
    }
    if (backend == Backend::Torch) {
        return {false,
                "--precision fp8: the torch backend has no FP8 path; allowed with torch: fp32|bf16 (FP8 needs --backend te)"};
    }
    const bool cuda = run_device(kind, device) == DeviceKind::Cuda;
    if (cuda && device.compute_capability && !runs_fp8_gemms(*device.compute_capability)) {
        return {false, "--precision fp8: this GPU has compute capability " + device.compute_capability->to_string() +
                           " and FP8 needs " + kFp8Minimum.to_string() +
                           "; allowed here: fp32|bf16, or --device cpu to emulate FP8 numerics"};
    }
    return {};
}

Availability te_impl_availability(TeImpl impl, DeviceKind kind, const DeviceInfo& device) {
    if (impl != TeImpl::Fused) return {};
    const bool cuda = run_device(kind, device) == DeviceKind::Cuda;
    if (cuda && device.compute_capability && !runs_fused_kernels(*device.compute_capability)) {
        return {false, "--te-impl fused: this GPU has compute capability " + device.compute_capability->to_string() +
                           " and the fused kernels need " + kTeMinimum.to_string() +
                           "; allowed here: auto|reference, or --device cpu for the fused path on the host kernels"};
    }
    return {};
}

}  // namespace tewb

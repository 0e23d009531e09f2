#include "core/device/Capability.h"

#include "core/common/Choice.h"
#include "core/common/Error.h"

namespace tewb {

std::vector<std::string> Capability::reasons() const {
    std::vector<std::string> lines{te_reason, fp8_reason};
    if (!fallback_reason.empty()) {
        lines.push_back(fallback_reason);
    }
    return lines;
}

Capability classify(std::optional<ComputeCapability> cc, std::string_view no_gpu_reason) {
    Capability result;
    if (!cc) {
        const std::string why = no_gpu_reason.empty() ? std::string("no CUDA device found") : std::string(no_gpu_reason);
        result.mode = Mode::Fallback;
        result.te_reason = "Not TE capable: no usable GPU (" + why + ")";
        result.fp8_reason = "Not FP8 capable: no usable GPU";
        result.fallback_reason = "Fallback: runs use plain LibTorch on the CPU because " + why;
        result.microscaling_reason = "MXFP8 and NVFP4: emulated here (their native GEMMs need compute capability 10.x)";
        return result;
    }
    const std::string cc_text = "compute capability " + cc->to_string();
    result.te_capable = runs_fused_kernels(*cc);
    result.fp8_capable = runs_fp8_gemms(*cc);
    result.te_reason = result.te_capable ? "TE capable: " + cc_text + " >= 8.0 runs the fused BF16 kernels"
                                         : "Not TE capable: " + cc_text + " < 8.0 (fused kernels need Ampere or newer)";
    result.fp8_reason = result.fp8_capable
                            ? "FP8 capable: " + cc_text + " >= 8.9 has FP8 tensor cores"
                            : "Not FP8 capable: " + cc_text + " < 8.9 (FP8 tensor cores need Ada, Hopper or newer)";
    result.microscaling_reason =
        runs_microscaling_gemms(*cc)
            ? "MXFP8 and NVFP4: " + cc_text + " runs their GEMMs natively; this workbench still emulates them (its native "
                                              "path is in the GEMM's rule table, not yet run on such a GPU)"
            : "MXFP8 and NVFP4: emulated here (" + cc_text + "; their native GEMMs need 10.x)";
    if (result.fp8_capable) {
        result.mode = Mode::Fp8;
    } else if (result.te_capable) {
        result.mode = Mode::Te;
    } else {
        result.mode = Mode::Fallback;
        result.fallback_reason = "Fallback: " + cc_text + " is below 8.0, so runs use plain LibTorch on this GPU";
    }
    return result;
}

bool cpu_machine(const DeviceInfo& device) {
    return !device.has_gpu() && device.driver_version.empty();
}

std::string no_gpu_words(const DeviceInfo& device) {
    if (cpu_machine(device)) return "This machine has no NVIDIA GPU: runs use the CPU.";
    return "The NVIDIA driver (" + device.driver_version + ") found no usable GPU.";
}

std::string what_still_works_without_gpu() {
    return "What still works: every run on the CPU (torch and te), FP8 emulated (real FP8 casts, GEMMs in higher "
           "precision), the history, charts and reports.";
}

Capability classify(const DeviceInfo& device) {
    if (!cpu_machine(device)) return classify(device.compute_capability, device.gpu_error);
    Capability result = classify(std::nullopt, "this machine has no NVIDIA GPU");
    result.te_reason = "Not TE capable: this machine has no NVIDIA GPU";
    result.fallback_reason = "CPU: this machine has no NVIDIA GPU, so runs use plain LibTorch on the CPU";
    return result;
}

OpsKind choose_ops(TeImpl impl, bool fused_cuda_built, bool cuda_device, std::optional<ComputeCapability> cc) {
    const bool te_capable = cc && runs_fused_kernels(*cc);
    const bool cuda_fits = fused_cuda_built && cuda_device && te_capable;
    switch (impl) {
        case TeImpl::Reference: return OpsKind::Reference;
        case TeImpl::Auto: return cuda_fits ? OpsKind::FusedCuda : OpsKind::Reference;
        case TeImpl::Fused:
            if (!cuda_device) return OpsKind::FusedHost;
            if (!fused_cuda_built) {
                throw ConfigError("--te-impl fused: this build has no CUDA kernels (configured without nvcc or with a CPU "
                                  "LibTorch); allowed here: auto, reference, or fused on the CPU");
            }
            if (!te_capable) {
                throw ConfigError("--te-impl fused: the fused kernels need compute capability " + kTeMinimum.to_string() +
                                  " or newer, this GPU has " + (cc ? cc->to_string() : std::string("none")) +
                                  "; allowed here: auto, reference, or fused on the CPU");
            }
            return OpsKind::FusedCuda;
    }
    return OpsKind::Reference;
}

}  // namespace tewb

#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/Choice.h"
#include "core/common/TeImpl.h"
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
    // Blackwell's microscaling formats (MXFP8, NVFP4): whether this GPU runs their GEMMs natively; the recipes emulate
    // them on every machine (docs/fp8.md, "Microscaling recipes"). Not one of the badges' reasons.
    std::string microscaling_reason;

    std::vector<std::string> reasons() const;
};

// The compute-capability rules: the one place core compares capabilities (the kernels library keeps its own
// GEMM rule table, kernels/gemm). Messages quote the two minima.
constexpr ComputeCapability kTeMinimum{8, 0};
constexpr ComputeCapability kFp8Minimum{8, 9};
// Ampere or newer: the fused BF16 kernels.
constexpr bool runs_fused_kernels(ComputeCapability cc) {
    return cc >= kTeMinimum;
}
// Ada, Hopper or newer: FP8 tensor cores (cuBLASLt's FP8 GEMMs).
constexpr bool runs_fp8_gemms(ComputeCapability cc) {
    return cc >= kFp8Minimum;
}
// Hopper (9.x): cuBLASLt's 1x128 / 128x128 block-scaled FP8 GEMMs may run; detection confirms with a probe
// (DeviceInfo::block_fp8_gemms), and on such a GPU their absence is itself a self-test failure.
constexpr bool may_run_block_gemms(ComputeCapability cc) {
    return cc.major == 9;
}
// Blackwell (10.x): cuBLASLt's MXFP8 and NVFP4 GEMMs (VEC32_UE8M0, VEC16_UE4M3); the kernels' GEMM rule table says the
// same (MxNeedsCC10).
constexpr bool runs_microscaling_gemms(ComputeCapability cc) {
    return cc.major == 10;
}

// Pure: the same inputs always give the same answer. `no_gpu_reason` is used when `cc` is empty.
Capability classify(std::optional<ComputeCapability> cc, std::string_view no_gpu_reason);
// A machine without an NVIDIA driver (cpu_machine) is classified in its own, neutral words: it is an ordinary CPU
// machine, not a GPU machine gone wrong, so no reason quotes the CUDA runtime's error (which reads "driver version
// is insufficient" there) and none calls it a fallback.
Capability classify(const DeviceInfo& device);
// No GPU and no NVIDIA driver: an ordinary CPU machine.
bool cpu_machine(const DeviceInfo& device);
// Why there is no GPU, in a user's words; the CUDA error text, where there is a driver, is for after it.
// "This machine has no NVIDIA GPU: runs use the CPU." or "The NVIDIA driver (580.65) found no usable GPU."
std::string no_gpu_words(const DeviceInfo& device);
// "What still works: every run on the CPU (torch and te), FP8 emulated (real FP8 casts, GEMMs in higher
// precision), the history, charts and reports."
std::string what_still_works_without_gpu();

// Which implementation of the te modules' ops --te-impl gets on a device. Auto: the fused kernels on a CUDA
// device of compute capability kTeMinimum or newer when this build has them, else the reference. Fused: the
// fused path on any device (on the CPU over the host kernels); on a CUDA device without them (not built, or
// below kTeMinimum) it throws ConfigError saying why. Reference: the reference everywhere. RunFacts and
// select_ops both ask it.
OpsKind choose_ops(TeImpl impl, bool fused_cuda_built, bool cuda_device, std::optional<ComputeCapability> cc);

template <>
struct EnumNames<Mode> {
    static constexpr NameTable table{
        std::to_array<Named<Mode>>({{"fp8", Mode::Fp8}, {"te", Mode::Te}, {"fallback", Mode::Fallback}})};
};

}  // namespace tewb

#include "core/selftest/SelfTest.h"

#include <chrono>
#include <cstdint>
#include <exception>

#ifdef TEWB_FUSED_CUDA
#include <ATen/cuda/CUDAContext.h>

#include "core/device/Capability.h"
#include "core/selftest/SelfTestChecks.h"
#endif

namespace tewb {

SelfTestReport run_self_test([[maybe_unused]] const DeviceInfo& device) {
    SelfTestReport report;
#ifndef TEWB_FUSED_CUDA
    report.skip_reason = "this build has no fused kernels (configured without nvcc, TEWB_BUILD_KERNELS=OFF, or a CPU-only LibTorch)";
    return report;
#else
    if (!device.has_gpu()) {
        report.skip_reason = "no usable CUDA device: " + device.gpu_error;
        return report;
    }
    if (!runs_fused_kernels(*device.compute_capability)) {
        report.skip_reason = "the fused kernels need compute capability " + kTeMinimum.to_string() + "; this GPU has " +
                             device.compute_capability->to_string();
        return report;
    }
    report.ran = true;
    report.device = device.gpu_name + " (compute capability " + device.compute_capability->to_string() + ")";
    report.seed = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    try {
        at::manual_seed(report.seed);
        selftest::Checks check(report);
        casts(check);
        layer_norms(check);
        gelus(check);
        swiglus(check);
        rotaries(check);
        attentions(check);
        microscaling(check);
        plain_gemms(check);
        const bool fp8 = runs_fp8_gemms(*device.compute_capability);  // cuBLASLt's FP8 GEMMs
        if (fp8) fp8_gemms(check);
        // cuBLASLt's block-scaled FP8 modes, as detection found them; on Hopper their absence is itself a failure,
        // which block_gemms' probe row reports.
        if (device.block_fp8_gemms || may_run_block_gemms(*device.compute_capability)) block_gemms(check);
        gemm_epilogues(check);
        recipe_updates(check);
        model_ends(check);
        layer_glue(check, fp8, device.block_fp8_gemms);
        at::cuda::getCurrentCUDAStream().synchronize();
    } catch (const std::exception& e) {
        report.error = e.what();
    }
    return report;
#endif
}

}  // namespace tewb

#pragma once

#include <optional>

#include "core/common/TeImpl.h"
#include "core/config/RunConfig.h"
#include "core/device/DeviceInfo.h"

namespace tewb {

// The dtype of a run's non-GEMM math (and of the attention's inputs): bfloat16 under autocast for BF16 and
// FP8 runs (FP8 keeps it in BF16, as Transformer Engine is used; on the CPU too), float32 for FP32 runs.
enum class ComputeDtype { Float32, BFloat16 };

// What follows from a run's settings on this machine, decided here once and read by everyone: the trainer,
// the record, the plans, the GUI's queue and form.
struct RunFacts {
    DeviceKind device = DeviceKind::Cpu;          // Cpu or Cuda
    Precision precision = Precision::Fp32;        // never Auto
    Precision baseline = Precision::Fp32;         // the torch baseline comparisons and sweeps measure against
    ComputeDtype compute = ComputeDtype::Float32;
    std::optional<OpsKind> te_ops;                // te backend only: which implementation of its ops runs
    bool block_gemms_native = false;              // a CUDA run where detection found cuBLASLt's block-scaled GEMMs
    bool fp8_emulated = false;                    // FP8 GEMMs emulated in float32: the timings are not FP8 speed
};

// The device a run asking for `kind` gets here: Auto is CUDA when a GPU is usable, else the CPU.
DeviceKind run_device(DeviceKind kind, const DeviceInfo& device);
// BF16 on a GPU, FP32 on the CPU (`device` Cpu or Cuda): the torch baseline, and what precision Auto becomes.
Precision baseline_precision(DeviceKind device);
ComputeDtype compute_dtype(Precision precision);

// The facts of `config` on `device`; Auto device and precision are fixed as resolve() fixes them. A te run
// whose --te-impl cannot run here throws ConfigError (choose_ops's words).
RunFacts run_facts(const RunConfig& config, const DeviceInfo& device);

}  // namespace tewb

#pragma once

#include <c10/core/Device.h>

#include "core/common/TeImpl.h"
#include "core/modules/ops/TeOps.h"

namespace tewb {

// "reference", "fused-host", "fused-cuda": the record's execution.te_impl.
std::string_view to_string(OpsKind kind);

// The rule, on plain facts so that it can be tested without a GPU. Auto: the fused kernels on a CUDA device
// of compute capability 8.0 or newer when this build has them, else the reference. Fused: the fused path on
// any device (on the CPU over the host kernels); on a CUDA device without them (not built, or below 8.0)
// it throws ConfigError saying why. Reference: the reference everywhere.
OpsKind choose_ops(TeImpl impl, bool fused_cuda_built, bool cuda_device, int cc_major);

// The one place that chooses the ops (casts, GEMMs, LayerNorm, GELU, amax and the FP8 scale update
// together) for tensors on `device`. A run calls it once and keeps the result.
const TeOps& select_ops(const c10::Device& device, TeImpl impl);
const TeOps& select_ops(const c10::Device& device);  // with te_impl_from_environment()

// A run's ops in force for the forward passes inside the scope (the trainer opens one per step, as it
// opens Fp8Scope): modules take their ops from ops_in_force, which outside any scope (tests, a module
// used on its own) is select_ops for the input's device. An inner scope wins until it ends.
class OpsScope {
public:
    explicit OpsScope(const TeOps& ops);
    ~OpsScope();
    OpsScope(const OpsScope&) = delete;
    OpsScope& operator=(const OpsScope&) = delete;

private:
    const TeOps* previous_;
};

const TeOps& ops_in_force(const c10::Device& device);

// Whether a run's FP8 GEMMs are emulated in float32 (its timings then are not FP8 speed, and records and
// names say so): with the reference ops and the fused ops on the host always, and with block scaling where
// the ops have no native block-scaled GEMM (anything but cuBLASLt on Hopper).
bool fp8_gemms_emulated(const TeOps& ops, ScalingKind scaling);

}  // namespace tewb

#pragma once

#include <c10/core/Device.h>

#include "core/modules/ops/TeOps.h"

namespace tewb {

// What a run asks for: the fused kernels wherever they can run (Auto), or the reference everywhere
// (TEWB_TE_IMPL=reference: the same model on the same GPU without kernels, to compare the two).
enum class TeImpl { Auto, Reference };

// TEWB_TE_IMPL: unset, empty or "auto" is Auto, "reference" is Reference; anything else throws
// ConfigError naming the variable and the allowed values.
TeImpl te_impl_from_environment();

// The rule, on plain facts so that it can be tested without a GPU: the fused ops run when asked for
// (Auto), built (the kernels and a CUDA LibTorch), on a CUDA device of compute capability 8.0 or newer.
bool fused_ops_apply(TeImpl impl, bool fused_built, bool cuda_device, int cc_major);

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
// names say so): always with the reference ops, and with block scaling where the ops have no native
// block-scaled GEMM (anything but cuBLASLt on Hopper).
bool fp8_gemms_emulated(const TeOps& ops, ScalingKind scaling);

}  // namespace tewb

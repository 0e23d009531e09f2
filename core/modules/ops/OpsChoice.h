#pragma once

#include <c10/core/Device.h>

#include "core/common/TeImpl.h"
#include "core/modules/ops/TeOps.h"

namespace tewb {

// OpsKind, its names and the rule that picks one (choose_ops): core/common/TeImpl.h.

// The one place that chooses the ops (casts, GEMMs, LayerNorm, GELU, amax and the FP8 scale update
// together) for tensors on `device`. A run calls it once and keeps the result.
const TeOps& select_ops(const c10::Device& device, TeImpl impl);
const TeOps& select_ops(const c10::Device& device);  // with te_impl_from_environment()
// The ops of a kind already decided (a run's RunFacts::te_ops). FusedCuda in a build without the CUDA kernels
// throws ConfigError.
const TeOps& ops_of_kind(OpsKind kind);

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

}  // namespace tewb

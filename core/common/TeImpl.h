#pragma once

#include <string_view>

#include "core/common/Choice.h"

namespace tewb {

// Which code runs the te backend's modules (--te-impl): Auto, the fused kernels on a CUDA device of
// compute capability 8.0 or newer and the reference elsewhere; Fused, the fused path on any device (on the
// CPU over the host kernels: the same orchestration, FP8 GEMMs emulated); Reference, the reference
// everywhere. The rule itself is core/modules/ops/OpsChoice.h.
enum class TeImpl { Auto, Fused, Reference };

template <>
struct EnumNames<TeImpl> {
    static constexpr NameTable table{
        std::to_array<Named<TeImpl>>({{"auto", TeImpl::Auto}, {"fused", TeImpl::Fused}, {"reference", TeImpl::Reference}})};
};

// TEWB_TE_IMPL, the environment form of --te-impl: unset or empty is Auto; a bad value throws ConfigError
// naming the variable. Front ends take it as the default that a --te-impl flag (or the GUI's choice) overrides.
TeImpl te_impl_from_environment();

// Which implementation of the te modules' ops a run gets: the answer to --te-impl on a given device.
enum class OpsKind {
    Reference,  // LibTorch ops with float32 math: runs anywhere, defines the numerics
    FusedHost,  // FusedOps over the host kernels (tewb_kernels/host): the fused orchestration on the CPU
    FusedCuda,  // FusedOps over the CUDA kernels and cuBLASLt
};

// "reference", "fused-host", "fused-cuda": the record's execution.te_impl. The rule that picks one is
// choose_ops (core/device/Capability.h).
std::string_view to_string(OpsKind kind);


}  // namespace tewb

#pragma once

#include <string_view>

namespace tewb {

// Which code runs the te backend's modules (--te-impl): Auto, the fused kernels on a CUDA device of
// compute capability 8.0 or newer and the reference elsewhere; Fused, the fused path on any device (on the
// CPU over the host kernels: the same orchestration, FP8 GEMMs emulated); Reference, the reference
// everywhere. The rule itself is core/modules/ops/OpsChoice.h.
enum class TeImpl { Auto, Fused, Reference };

std::string_view to_string(TeImpl value);                            // "auto" | "fused" | "reference"
TeImpl parse_te_impl(std::string_view flag, std::string_view text);  // throws ConfigError naming `flag`
// TEWB_TE_IMPL, the environment form of --te-impl: unset or empty is Auto; a bad value throws ConfigError
// naming the variable. Front ends take it as the default that a --te-impl flag (or the GUI's choice) overrides.
TeImpl te_impl_from_environment();

}  // namespace tewb

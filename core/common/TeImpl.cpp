#include "core/common/TeImpl.h"

#include <array>
#include <cstdlib>

#include "core/common/Choice.h"

namespace tewb {

TeImpl te_impl_from_environment() {
    const char* value = std::getenv("TEWB_TE_IMPL");
    if (value == nullptr || *value == '\0') return TeImpl::Auto;
    return parse_name<TeImpl>("environment variable TEWB_TE_IMPL", value);
}

std::string_view to_string(OpsKind kind) {
    switch (kind) {
        case OpsKind::Reference: return "reference";
        case OpsKind::FusedHost: return "fused-host";
        case OpsKind::FusedCuda: return "fused-cuda";
    }
    return "unknown";
}

}  // namespace tewb

#include "core/common/TeImpl.h"

#include <array>
#include <cstdlib>

#include "core/common/Choice.h"

namespace tewb {

namespace {

constexpr NameTable kTeImplNames{
    std::to_array<Named<TeImpl>>({{"auto", TeImpl::Auto}, {"fused", TeImpl::Fused}, {"reference", TeImpl::Reference}})};

}  // namespace

std::string_view to_string(TeImpl value) {
    return kTeImplNames.name(value);
}

TeImpl parse_te_impl(std::string_view flag, std::string_view text) {
    return kTeImplNames.parse(flag, text);
}

TeImpl te_impl_from_environment() {
    const char* value = std::getenv("TEWB_TE_IMPL");
    if (value == nullptr || *value == '\0') return TeImpl::Auto;
    return kTeImplNames.parse("environment variable TEWB_TE_IMPL", value);
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

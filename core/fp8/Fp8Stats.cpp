#include "core/fp8/Fp8Stats.h"

#include <cmath>

#include "core/common/Choice.h"

namespace tewb {

double snr_db(double rel_mse) {
    return -10.0 * std::log10(rel_mse);
}


namespace {

constexpr NameTable kRoleNames{std::to_array<Named<SlotRole>>({{"input", SlotRole::Input},
                                                              {"weight", SlotRole::Weight},
                                                              {"output", SlotRole::Output},
                                                              {"grad_output", SlotRole::GradOutput},
                                                              {"grad_input", SlotRole::GradInput}})};

}  // namespace

std::string_view to_string(SlotRole value) {
    return kRoleNames.name(value);
}

SlotRole parse_slot_role(std::string_view what, std::string_view text) {
    return kRoleNames.parse(what, text);
}

}  // namespace tewb

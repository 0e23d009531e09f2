#include "core/fp8/Fp8Stats.h"

#include "core/common/Choice.h"

namespace tewb {

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

#include "core/fp8/Fp8Stats.h"

#include "core/common/Choice.h"

namespace tewb {

std::string_view to_string(SlotRole value) {
    switch (value) {
        case SlotRole::Input: return "input";
        case SlotRole::Weight: return "weight";
        case SlotRole::Output: return "output";
        case SlotRole::GradOutput: return "grad_output";
        case SlotRole::GradInput: return "grad_input";
    }
    return "input";
}

SlotRole parse_slot_role(std::string_view what, std::string_view text) {
    return parse_choice<SlotRole>(what, text,
                                  {{"input", SlotRole::Input},
                                   {"weight", SlotRole::Weight},
                                   {"output", SlotRole::Output},
                                   {"grad_output", SlotRole::GradOutput},
                                   {"grad_input", SlotRole::GradInput}});
}

}  // namespace tewb

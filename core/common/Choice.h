#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "core/common/Error.h"

namespace tewb {

// Text to one of a fixed set of values. Throws ConfigError naming `what` (a flag or a JSON path), the
// text and every allowed value: "--precision 'fp16': unknown value; allowed: auto|fp32|bf16|fp8".
template <typename Value>
Value parse_choice(std::string_view what, std::string_view text,
                   std::initializer_list<std::pair<std::string_view, Value>> choices) {
    std::string allowed;
    for (const auto& [name, value] : choices) {
        if (text == name) {
            return value;
        }
        if (!allowed.empty()) {
            allowed += '|';
        }
        allowed += name;
    }
    throw ConfigError(std::string(what) + " '" + std::string(text) + "': unknown value; allowed: " + allowed);
}

}  // namespace tewb

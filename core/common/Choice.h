#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "core/common/Error.h"

namespace tewb {

template <typename Value>
using Named = std::pair<std::string_view, Value>;

// The names of an enum's values, in one table that both directions read: to_string (name) and the
// parsers of CLI flags and JSON fields (parse). Build one with std::to_array<Named<E>>({...}).
template <typename Value, std::size_t N>
class NameTable {
public:
    constexpr explicit NameTable(std::array<Named<Value>, N> entries) : entries_(entries) {}

    constexpr std::string_view name(Value value) const {
        for (const auto& [name, v] : entries_) {
            if (v == value) return name;
        }
        return "unknown";
    }

    // Throws ConfigError naming `what` (a flag or a JSON path), the text and every allowed value:
    // "--precision 'fp16': unknown value; allowed: auto|fp32|bf16|fp8".
    Value parse(std::string_view what, std::string_view text) const {
        std::string allowed;
        for (const auto& [name, value] : entries_) {
            if (text == name) return value;
            if (!allowed.empty()) allowed += '|';
            allowed += name;
        }
        throw ConfigError(std::string(what) + " '" + std::string(text) + "': unknown value; allowed: " + allowed);
    }

private:
    std::array<Named<Value>, N> entries_;
};

// An enum's names, declared beside the enum once, as a specialisation:
//   template <> struct EnumNames<Precision> { static constexpr NameTable table{std::to_array<Named<Precision>>({...})}; };
// which gives it to_string (value to name: records, flags, tables) and parse_name (name to value, throwing
// ConfigError that names `what` and every allowed value) without a hand-written pair of functions.
template <typename E>
struct EnumNames;

template <typename E>
concept NamedEnum = std::is_enum_v<E> && requires { EnumNames<E>::table; };

template <NamedEnum E>
constexpr std::string_view to_string(E value) {
    return EnumNames<E>::table.name(value);
}

template <NamedEnum E>
E parse_name(std::string_view what, std::string_view text) {
    return EnumNames<E>::table.parse(what, text);
}

}  // namespace tewb

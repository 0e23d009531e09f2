#include "core/common/NumberText.h"

#include <charconv>
#include <cmath>

namespace tewb {

std::optional<std::string_view> non_finite_text(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    return std::nullopt;
}

std::string shortest_text(double value) {
    if (const auto word = non_finite_text(value)) return std::string(*word);
    char text[64];
    const auto result = std::to_chars(text, text + sizeof text, value);
    return std::string(text, result.ptr);
}

std::string shortest_text(float value) {
    if (const auto word = non_finite_text(value)) return std::string(*word);
    char text[32];
    const auto result = std::to_chars(text, text + sizeof text, value);
    return std::string(text, result.ptr);
}

std::string readable_number(double value) {
    const double magnitude = std::abs(value);
    if (!std::isfinite(value) || (magnitude != 0 && (magnitude < 1e-4 || magnitude >= 1e15))) return shortest_text(value);
    char text[64];
    const auto result = std::to_chars(text, text + sizeof text, value, std::chars_format::fixed);
    return std::string(text, result.ptr);
}

}  // namespace tewb

#include "core/config/RunNames.h"

#include <algorithm>
#include <cstddef>

#include "core/config/RunConfig.h"

namespace tewb {

namespace {

bool is_taken(const std::string& name, const std::vector<std::string>& taken) {
    return std::find(taken.begin(), taken.end(), name) != taken.end();
}

// `name` without a trailing " #<digits>".
std::string base_of(const std::string& name) {
    const std::size_t hash = name.rfind(" #");
    if (hash == std::string::npos || hash + 2 == name.size()) return name;
    const bool digits = std::all_of(name.begin() + static_cast<std::ptrdiff_t>(hash + 2), name.end(),
                                    [](char c) { return c >= '0' && c <= '9'; });
    return digits ? name.substr(0, hash) : name;
}

// The longest prefix of `text` of at most `bytes` bytes that ends on a UTF-8 character boundary.
std::string utf8_prefix(const std::string& text, std::size_t bytes) {
    if (text.size() <= bytes) return text;
    std::size_t end = bytes;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xc0u) == 0x80u) --end;
    return text.substr(0, end);
}

}  // namespace

std::string distinct_name(const std::string& name, const std::vector<std::string>& taken) {
    if (!is_taken(name, taken)) return name;
    const std::string base = base_of(name);
    for (std::size_t number = 2;; ++number) {
        const std::string suffix = " #" + std::to_string(number);
        const std::string candidate = utf8_prefix(base, kMaxRunNameLength - std::min(kMaxRunNameLength, suffix.size())) + suffix;
        if (!is_taken(candidate, taken)) return candidate;
    }
}

}  // namespace tewb

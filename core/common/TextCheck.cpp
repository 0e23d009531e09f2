#include "core/common/TextCheck.h"

#include <cstdint>

namespace tewb {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length in bytes of the well-formed UTF-8 sequence at `text[i]` and its code point, or 0 when the bytes
// there are not one (truncated, overlong, a surrogate, beyond U+10FFFF).
std::size_t decode(std::string_view text, std::size_t i, std::uint32_t& code_point) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char lead = byte(i);
    std::size_t length = 0;
    std::uint32_t min = 0;
    if (lead < 0x80) {
        code_point = lead;
        return 1;
    } else if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2, code_point = lead & 0x1F, min = 0x80;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3, code_point = lead & 0x0F, min = 0x800;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4, code_point = lead & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (i + length > text.size()) return 0;
    for (std::size_t k = 1; k < length; ++k) {
        if ((byte(i + k) & 0xC0) != 0x80) return 0;
        code_point = (code_point << 6) | (byte(i + k) & 0x3F);
    }
    if (code_point < min || code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF)) return 0;
    return length;
}

bool is_control(std::uint32_t code_point) {
    return code_point < 0x20 || (code_point >= 0x7F && code_point <= 0x9F);
}

// The Unicode name of a bidirectional control, or nullptr when `code_point` is none.
const char* bidi_control_name(std::uint32_t code_point) {
    switch (code_point) {
        case 0x061C: return "ARABIC LETTER MARK";
        case 0x200E: return "LEFT-TO-RIGHT MARK";
        case 0x200F: return "RIGHT-TO-LEFT MARK";
        case 0x202A: return "LEFT-TO-RIGHT EMBEDDING";
        case 0x202B: return "RIGHT-TO-LEFT EMBEDDING";
        case 0x202C: return "POP DIRECTIONAL FORMATTING";
        case 0x202D: return "LEFT-TO-RIGHT OVERRIDE";
        case 0x202E: return "RIGHT-TO-LEFT OVERRIDE";
        case 0x2066: return "LEFT-TO-RIGHT ISOLATE";
        case 0x2067: return "RIGHT-TO-LEFT ISOLATE";
        case 0x2068: return "FIRST STRONG ISOLATE";
        case 0x2069: return "POP DIRECTIONAL ISOLATE";
        default: return nullptr;
    }
}

std::string hex(std::uint32_t code_point) {
    static const char* digits = "0123456789ABCDEF";
    std::string out = "U+";
    for (int shift = 12; shift >= 0; shift -= 4) out += digits[(code_point >> shift) & 0xF];
    return out;
}

}  // namespace

std::optional<std::string> text_problem(std::string_view text, std::size_t max_chars) {
    std::size_t chars = 0;
    for (std::size_t i = 0; i < text.size();) {
        std::uint32_t code_point = 0;
        const std::size_t length = decode(text, i, code_point);
        if (length == 0) {
            return "is not valid UTF-8 (byte " + std::to_string(i + 1) + ")";
        }
        if (is_control(code_point)) {
            return "contains a control character (" + hex(code_point) + " at character " + std::to_string(chars + 1) +
                   ")";
        }
        ++chars;
        i += length;
    }
    if (chars > max_chars) {
        return "is " + std::to_string(chars) + " characters long";
    }
    return std::nullopt;
}

std::optional<std::string> bidi_control_at(std::string_view text) {
    std::size_t chars = 0;
    for (std::size_t i = 0; i < text.size();) {
        std::uint32_t code_point = 0;
        const std::size_t length = decode(text, i, code_point);
        if (length == 0) return std::nullopt;
        ++chars;
        if (const char* name = bidi_control_name(code_point)) {
            return hex(code_point) + " " + name + " at character " + std::to_string(chars);
        }
        i += length;
    }
    return std::nullopt;
}

std::string printable_text(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        std::uint32_t code_point = 0;
        const std::size_t length = decode(text, i, code_point);
        if (length == 0 || is_control(code_point) || bidi_control_name(code_point) != nullptr) {
            out += kReplacement;
            i += length == 0 ? 1 : length;
        } else {
            out += text.substr(i, length);
            i += length;
        }
    }
    return out;
}

std::string quoted(std::string_view text) {
    std::string out(1, '\'');  // appended, not "'" + text: GCC 12 warns falsely (-Wrestrict) on that form
    out += text;
    out += '\'';
    return out;
}

std::string with_long_values_cut(std::string_view message) {
    constexpr std::size_t kLongest = 200;
    constexpr std::size_t kKept = 80;
    std::string out;
    std::size_t start = 0;
    while (start < message.size()) {
        std::size_t end = message.find(' ', start);
        if (end == std::string_view::npos) end = message.size();
        const std::string_view word = message.substr(start, end - start);
        if (word.size() > kLongest) {
            std::size_t keep = kKept;
            while (keep > 0 && (static_cast<unsigned char>(word[keep]) & 0xC0) == 0x80) --keep;  // a whole UTF-8 character
            out += std::string(word.substr(0, keep)) + "...(" + std::to_string(word.size()) + " characters)";
        } else {
            out += word;
        }
        if (end < message.size()) out += ' ';
        start = end + 1;
    }
    return out;
}

std::string without_stack_frames(std::string_view message) {
    std::string_view kept = message.substr(0, message.find("Exception raised from "));
    while (!kept.empty() && (kept.back() == '\n' || kept.back() == ' ')) kept.remove_suffix(1);
    return std::string(kept.empty() ? message : kept);
}

}  // namespace tewb

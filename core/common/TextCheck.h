#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace tewb {

// Text a user gives (a run name) or a file brings (a record's name) is checked before it is used:
// valid UTF-8, no control characters (C0, DEL, C1), at most `max_chars` characters. Returns why it is
// not acceptable ("is not valid UTF-8 (byte 3)", "is 201 characters long"), or nothing when it is.
std::optional<std::string> text_problem(std::string_view text, std::size_t max_chars);

// For terminals and tables: invalid UTF-8 and control characters each become U+FFFD, so stored text can
// never move the cursor, colour the terminal or forge a table row.
std::string printable_text(std::string_view text);

}  // namespace tewb

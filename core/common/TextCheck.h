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

// The bidirectional controls: each reorders how the text around it is displayed, so a name holding one shows
// as something other than what is stored ("run<U+202E>gpj.exe" reads "runexe.jpg").
inline constexpr std::string_view kBidiControls = "U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069";

// The first bidirectional control in valid UTF-8 `text`, named with its position ("U+202E RIGHT-TO-LEFT
// OVERRIDE at character 3"), or nothing.
std::optional<std::string> bidi_control_at(std::string_view text);

// For terminals and tables: invalid UTF-8, control characters and bidirectional controls each become U+FFFD,
// so stored text can never move the cursor, colour the terminal, reorder a line or forge a table row.
std::string printable_text(std::string_view text);
// 'text', as messages quote a value the user gave.
std::string quoted(std::string_view text);
// A message with every run of more than 200 characters without a space (a value echoed back: a path, a number, a
// list) cut to its first 80 and its length, so a 100 KB argument gives a readable line.
std::string with_long_values_cut(std::string_view message);
// A message up to LibTorch's "Exception raised from ..." and the C++ stack frames after it (c10::Error::what()
// carries them), without trailing blanks; any other message as it is.
std::string without_stack_frames(std::string_view message);

}  // namespace tewb

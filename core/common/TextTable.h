#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tewb {

// Plain-text tables for terminals: columns aligned with two spaces between them, numbers right-aligned.
std::string render_text_table(const std::vector<std::string>& headers, const std::vector<std::vector<std::string>>& rows);

// 1536 -> "1.5 KiB".
std::string format_bytes(std::uint64_t bytes);
// Fixed decimals with a suffix ("1.80x"); "-" for no value, the words of NumberText.h for non-finite ones.
std::string format_fixed(const std::optional<double>& value, int decimals, const std::string& suffix = "");
// Three significant digits, in exponent form when that is shorter ("0.00123", "1.23e-07", "448"); non-finite
// values as NumberText.h writes them.
std::string format_significant(double value);
// TFLOP/s as tables show them: two decimals from 1 up, three significant digits below, so a CPU run reads
// "0.0123", not "0.01" or "0.00"; "-" for no value.
std::string format_tflops(const std::optional<double>& tflops);

}  // namespace tewb

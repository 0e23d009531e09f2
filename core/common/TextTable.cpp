#include "core/common/TextTable.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/common/NumberText.h"
#include "core/common/TextCheck.h"

namespace tewb {

std::string format_bytes(std::uint64_t bytes) {
    static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double value = static_cast<double>(bytes);
    int unit = 0;
    while (value >= 1024.0 && unit < 4) {
        value /= 1024.0;
        ++unit;
    }
    char text[32];
    std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", value, kUnits[unit]);
    return text;
}

std::string format_fixed(const std::optional<double>& value, int decimals, const std::string& suffix) {
    if (!value) {
        return "-";
    }
    if (const auto word = non_finite_text(*value)) {
        return std::string(*word);
    }
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", decimals, *value);
    return text + suffix;
}

std::string format_significant(double value) {
    if (const auto word = non_finite_text(value)) return std::string(*word);
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", value);
    return text;
}

std::string format_tflops(const std::optional<double>& tflops) {
    if (!tflops) return "-";
    return std::isfinite(*tflops) && std::abs(*tflops) < 1.0 && *tflops != 0.0 ? format_significant(*tflops) : format_fixed(tflops, 2);
}

namespace {
// Characters on the terminal, not bytes: a name in Cyrillic lines up like one in ASCII.
std::size_t display_width(const std::string& text) {
    return static_cast<std::size_t>(
        std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}
}  // namespace

std::string render_text_table(const std::vector<std::string>& headers, const std::vector<std::vector<std::string>>& raw_rows) {
    // Cells may hold stored text (run names from an imported record): never let it reach the terminal raw.
    std::vector<std::vector<std::string>> rows;
    rows.reserve(raw_rows.size());
    for (const auto& raw : raw_rows) {
        std::vector<std::string> row;
        row.reserve(raw.size());
        for (const std::string& cell : raw) row.push_back(printable_text(cell));
        rows.push_back(std::move(row));
    }
    std::vector<std::size_t> widths(headers.size(), 0);
    std::vector<bool> numeric(headers.size(), true);
    for (std::size_t c = 0; c < headers.size(); ++c) {
        widths[c] = display_width(headers[c]);
    }
    for (const auto& row : rows) {
        for (std::size_t c = 0; c < row.size() && c < headers.size(); ++c) {
            widths[c] = std::max(widths[c], display_width(row[c]));
            const std::string& cell = row[c];
            const bool looks_numeric =
                cell == "-" || (!cell.empty() && (std::isdigit(static_cast<unsigned char>(cell[0])) || cell[0] == '-'));
            numeric[c] = numeric[c] && looks_numeric;
        }
    }
    std::ostringstream out;
    const auto emit = [&](const std::vector<std::string>& cells) {
        for (std::size_t c = 0; c < headers.size(); ++c) {
            const std::string cell = c < cells.size() ? cells[c] : "";
            const std::string pad(widths[c] - std::min(widths[c], display_width(cell)), ' ');
            out << (c == 0 ? "" : "  ") << (numeric[c] ? pad + cell : cell + (c + 1 == headers.size() ? "" : pad));
        }
        out << '\n';
    };
    emit(headers);
    for (const auto& row : rows) {
        emit(row);
    }
    return out.str();
}

}  // namespace tewb

#include "core/common/TextTable.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>

#include "core/common/NumberText.h"

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

std::string render_text_table(const std::vector<std::string>& headers, const std::vector<std::vector<std::string>>& rows) {
    std::vector<std::size_t> widths(headers.size(), 0);
    std::vector<bool> numeric(headers.size(), true);
    for (std::size_t c = 0; c < headers.size(); ++c) {
        widths[c] = headers[c].size();
    }
    for (const auto& row : rows) {
        for (std::size_t c = 0; c < row.size() && c < headers.size(); ++c) {
            widths[c] = std::max(widths[c], row[c].size());
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
            const std::string pad(widths[c] - std::min(widths[c], cell.size()), ' ');
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

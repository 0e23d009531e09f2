#include "core/results/Comparison.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace tewb {

std::vector<ComparisonRow> compare_runs(const std::vector<RunRecord>& runs, std::optional<std::size_t> baseline) {
    std::vector<ComparisonRow> rows;
    const RunRecord* base = baseline && *baseline < runs.size() ? &runs[*baseline] : nullptr;
    for (const RunRecord& run : runs) {
        ComparisonRow row{&run, std::nullopt, std::nullopt};
        if (base != nullptr) {
            if (base->summary.mean_ms && run.summary.mean_ms && *run.summary.mean_ms > 0) {
                row.speedup = *base->summary.mean_ms / *run.summary.mean_ms;
            }
            if (base->summary.peak_mem_bytes > 0 && run.summary.peak_mem_bytes > 0) {
                row.memory_ratio =
                    static_cast<double>(run.summary.peak_mem_bytes) / static_cast<double>(base->summary.peak_mem_bytes);
            }
        }
        rows.push_back(row);
    }
    return rows;
}

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
    if (!std::isfinite(*value)) {
        return std::isnan(*value) ? "nan" : (*value > 0 ? "inf" : "-inf");
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

std::string render_summary_table(const std::vector<RunRecord>& runs, std::optional<std::size_t> baseline) {
    const std::vector<ComparisonRow> comparison = compare_runs(runs, baseline);
    std::vector<std::vector<std::string>> rows;
    for (const ComparisonRow& row : comparison) {
        const RunRecord& r = *row.run;
        const RunSummary& s = r.summary;
        std::string status(to_string(r.status));
        const std::string precision =
            std::string(to_string(r.config.precision)) + (r.execution.fp8_emulated ? " (emulated)" : "");
        rows.push_back({r.config.name, std::string(to_string(r.config.backend)), precision,
                        r.execution.device, status, format_fixed(s.mean_ms, 2), format_fixed(s.median_ms, 2),
                        format_fixed(s.p90_ms, 2), format_fixed(s.tokens_per_s, 0), format_fixed(s.tflops, 2),
                        s.mfu ? format_fixed(*s.mfu * 100.0, 1, "%") : "-",
                        s.peak_mem_bytes == 0                                   ? "-"
                        : r.execution.memory_metric == MemoryMetric::CpuPeakRss ? format_bytes(s.peak_mem_bytes) + " RSS"
                                                                                : format_bytes(s.peak_mem_bytes),
                        format_fixed(s.final_loss, 4), row.speedup ? format_fixed(row.speedup, 2, "x") : "-",
                        row.memory_ratio ? format_fixed(row.memory_ratio, 2, "x") : "-"});
    }
    return render_text_table({"run", "backend", "precision", "device", "status", "mean ms", "median ms", "p90 ms", "tokens/s",
                              "TFLOP/s", "MFU", "peak mem", "final loss", "speedup", "mem ratio"},
                             rows);
}

}  // namespace tewb

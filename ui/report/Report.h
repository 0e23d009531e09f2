#pragma once

#include <filesystem>
#include <optional>
#include <vector>

#include <QImage>
#include <QString>

#include "core/results/RunRecord.h"
#include "ui/charts/MetricSpec.h"

namespace tewb::ui {

class RunCollection;

// A report to hand over: the headline computed from the data, the machine and its capability badges,
// each run's configuration with the command line that reproduces it and its honesty labels (CPU,
// emulated FP8, fewer steps than the seed, …), the loss, step-time and memory charts, the comparison
// table with speedups and their 95% intervals, and the FP8 digest of each FP8 run.
struct ReportContent {
    QString headline;
    QString html;  // images referenced as "chart-<id>.png"
    std::vector<std::pair<QString, QImage>> images;  // name → image
};

ReportContent build_report(const RunCollection& runs, const std::vector<RunRecord>& summarized,
                           std::optional<std::size_t> baseline, const PlotOptions& options);

// Writes the report as PDF (Qt's own PDF writer, A4 pages) or as one self-contained HTML file (images
// inlined as data URLs), chosen by the extension (.pdf, .html or .htm; anything else: ConfigError).
// Written atomically (core's rule); throws DataError naming the path when it cannot be written.
void write_report(const std::filesystem::path& path, const ReportContent& report);

}  // namespace tewb::ui

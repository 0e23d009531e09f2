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
// emulated FP8, fewer timed steps than the seed, …), the loss, step-time and memory charts, the comparison
// table with speedups and their 95% intervals, and the FP8 digest of each FP8 run.
struct ReportContent {
    QString headline;
    QString html;  // images referenced as "chart-<id>.png"
    std::vector<std::pair<QString, QImage>> images;  // name → image
};

ReportContent build_report(const RunCollection& runs, const std::vector<RunRecord>& summarized,
                           std::optional<std::size_t> baseline, const PlotOptions& options);

enum class ReportFormat { Pdf, Html };

// The format a report path asks for by its extension, in any case: .pdf, or .html / .htm ("report.PDF" is a
// PDF). Throws ConfigError naming the path and what is allowed otherwise. te-workbench --report and the GUI
// ask this before building a report, write_report by it, so no extension passes one and fails the other.
ReportFormat report_format(const std::filesystem::path& path);

// Writes the report as PDF (Qt's own PDF writer, A4 pages) or as one self-contained HTML file (images
// inlined as data URLs), chosen by report_format (anything else: ConfigError, nothing written).
// Written atomically (core's rule); throws DataError naming the path when it cannot be written.
void write_report(const std::filesystem::path& path, const ReportContent& report);

}  // namespace tewb::ui

#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <vector>

#include <QImage>
#include <QSize>
#include <QStringList>

#include "core/results/RunRecord.h"
#include "ui/charts/MetricSpec.h"

namespace tewb::ui {

class RunCollection;

// One chart as the window shows it, to be drawn again off-screen.
struct ChartToExport {
    MetricSpec spec;
    PlotOptions options;
};

// What the window's exports draw from, taken from its views when an export starts.
struct ExportSources {
    const RunCollection& runs;
    std::vector<RunRecord> summarized;      // the comparison table's rows (one per run or group of repeats)
    std::optional<std::size_t> baseline;    // an index into `summarized`
    PlotOptions options;                    // the dashboard's charts' options
    std::vector<ChartToExport> charts;      // the charts and, with FP8 statistics, the FP8 charts
    std::function<QImage(QSize)> heat_map;  // the FP8 heat map at a size; empty without FP8 statistics
};

// Each writes one file (or, for the charts, one per chart into `directory`) through core's atomic writer and
// throws with the reason (DataError, ConfigError) instead: no file is ever left half-written.
void export_dashboard_png(const ExportSources& sources, const std::filesystem::path& path);
void export_chart_pngs(const ExportSources& sources, const std::filesystem::path& directory);
void export_steps_csv(const ExportSources& sources, const std::filesystem::path& path);
void export_comparison_csv(const ExportSources& sources, const std::filesystem::path& path);
void export_fp8_csv(const ExportSources& sources, const std::filesystem::path& path);
void export_block_scales_csv(const ExportSources& sources, const std::filesystem::path& path);
void export_json(const ExportSources& sources, const std::filesystem::path& path);  // refuses when there are no runs
// Every run shown as TensorBoard event files under `directory` (core's write_tensorboard); refuses when there are none.
std::vector<std::filesystem::path> export_tensorboard(const ExportSources& sources, const std::filesystem::path& directory);

// Every file export_all may write (fp8.csv and the FP8 charts only with FP8 statistics, fp8_block_scales.csv only
// with block-scale histograms, runs.json only with runs), for the checks before a demo trains.
QStringList export_all_file_names();
// `window` (the window as it looks) as window.png, then the dashboard, the charts, the CSVs and the records,
// into `directory`, which must exist; stops at the first failure.
void export_all(const ExportSources& sources, const QImage& window, const std::filesystem::path& directory);

}  // namespace tewb::ui

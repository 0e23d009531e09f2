#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <QImage>
#include <QSize>
#include <QStringList>
#include <QString>

#include "core/results/RunRecord.h"
#include "ui/charts/MetricSpec.h"

namespace tewb::ui {

class RunCollection;

// Sizes of exported images, in logical pixels; images are rendered at kExportScale times that.
inline constexpr QSize kChartExportSize{1200, 700};
inline constexpr QSize kDashboardExportSize{1600, 1000};
inline constexpr qreal kExportScale = 2.0;

// One chart, off-screen, at `logical` size and `scale` pixels per unit.
QImage render_chart(const MetricSpec& spec, const PlotOptions& options, const RunCollection& runs,
                    QSize logical = kChartExportSize, qreal scale = kExportScale, bool legend = true);

// What render_dashboard drew, for checks: the legend's names and the image's logical size (taller than
// asked when the table needs it).
struct DashboardContents {
    QStringList legend_labels;
    QSize logical_size;
};

// The comparison table as HTML, one row per run or per group of repeats (core's group_runs): ms/step,
// its spread, speedup with its 95% interval ("not significant" when it contains 1.0), memory, loss; FP8
// runs that were emulated say so in their name. The dashboard and the report print it.
QString comparison_table_html(const RunCollection& runs, const std::vector<RunRecord>& summarized,
                              std::optional<std::size_t> baseline, const QString& textColour);

// The dashboard: a title line (what ran where), the loss, step-time and memory charts, and the
// comparison table against `baseline` (an index into the runs), drawn off-screen.
QImage render_dashboard(const RunCollection& runs, const std::vector<RunRecord>& summarized,
                        std::optional<std::size_t> baseline, const PlotOptions& options,
                        QSize logical = kDashboardExportSize, qreal scale = kExportScale, DashboardContents* contents = nullptr);

// Throws ConfigError unless `path` may hold a PNG image: a .png extension in any case, or none. Another
// extension (chart.jpg) names a format that is not written: refused before anything is rendered, instead of
// PNG bytes under a JPEG name.
void check_png_path(const std::filesystem::path& path);

// Encodes `image` as PNG and writes it atomically (core's write_file_atomically: a temporary file renamed
// over the target), so an error leaves the old file, or none, and throws DataError naming the path. Calls
// check_png_path first.
void write_png(const std::filesystem::path& path, const QImage& image);

}  // namespace tewb::ui

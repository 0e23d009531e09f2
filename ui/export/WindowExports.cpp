#include "ui/export/WindowExports.h"

#include <set>
#include <string>

#include "core/common/Error.h"
#include "core/results/AtomicFile.h"
#include "core/results/RecordCsv.h"
#include "core/results/RecordJson.h"
#include "core/results/TensorBoardEvents.h"
#include "ui/export/Export.h"
#include "ui/runs/RunCollection.h"

namespace tewb::ui {

namespace {

bool has_fp8_statistics(const RunCollection& runs) {
    for (const RunCollection::Entry& e : runs.entries()) {
        if (!e.record.fp8_slots.empty()) return true;
    }
    return false;
}

bool has_block_scales(const RunCollection& runs) {
    for (const RunCollection::Entry& e : runs.entries()) {
        if (!e.record.fp8_block_scales.empty()) return true;
    }
    return false;
}

}  // namespace

void export_dashboard_png(const ExportSources& sources, const std::filesystem::path& path) {
    check_png_path(path);  // before the dashboard is drawn
    write_png(path, render_dashboard(sources.runs, sources.summarized, sources.baseline, sources.options));
}

void export_chart_pngs(const ExportSources& sources, const std::filesystem::path& directory) {
    for (const ChartToExport& chart : sources.charts) {
        write_png(directory / (chart.spec.id.toStdString() + ".png"), render_chart(chart.spec, chart.options, sources.runs));
    }
    if (sources.heat_map) write_png(directory / "fp8_heatmap.png", sources.heat_map(QSize(1600, 900)));
}

void export_steps_csv(const ExportSources& sources, const std::filesystem::path& path) {
    write_file_atomically(path, steps_csv_text(sources.runs.records()));
}

void export_comparison_csv(const ExportSources& sources, const std::filesystem::path& path) {
    write_file_atomically(path, summary_csv_text(sources.summarized, sources.baseline));
}

void export_fp8_csv(const ExportSources& sources, const std::filesystem::path& path) {
    write_file_atomically(path, fp8_csv_text(sources.runs.records()));
}

void export_block_scales_csv(const ExportSources& sources, const std::filesystem::path& path) {
    write_file_atomically(path, block_scales_csv_text(sources.runs.records()));
}

void export_json(const ExportSources& sources, const std::filesystem::path& path) {
    if (sources.runs.empty()) throw DataError(path.string() + ": there are no runs to write");
    write_file_atomically(path, records_to_json_text(sources.runs.records()));
}

std::vector<std::filesystem::path> export_tensorboard(const ExportSources& sources, const std::filesystem::path& directory) {
    if (sources.runs.empty()) throw DataError(directory.string() + ": there are no runs to write");
    // A run opened twice (from History and a file) is one run to TensorBoard.
    std::vector<RunRecord> runs;
    std::set<std::string> ids;
    for (RunRecord& r : sources.runs.records()) {
        if (ids.insert(r.id).second) runs.push_back(std::move(r));
    }
    return write_tensorboard(runs, directory, "TensorBoard folder", std::nullopt);
}

QStringList export_all_file_names() {
    return {QStringLiteral("window.png"),     QStringLiteral("dashboard.png"), QStringLiteral("loss.png"),
            QStringLiteral("step_ms.png"),    QStringLiteral("memory.png"),    QStringLiteral("fp8_amax.png"),
            QStringLiteral("fp8_scale.png"),  QStringLiteral("fp8_heatmap.png"), QStringLiteral("steps.csv"),
            QStringLiteral("comparison.csv"), QStringLiteral("fp8.csv"),       QStringLiteral("fp8_block_scales.csv"),
            QStringLiteral("runs.json")};
}

void export_all(const ExportSources& sources, const QImage& window, const std::filesystem::path& directory) {
    write_png(directory / "window.png", window);
    export_dashboard_png(sources, directory / "dashboard.png");
    export_chart_pngs(sources, directory);
    export_steps_csv(sources, directory / "steps.csv");
    export_comparison_csv(sources, directory / "comparison.csv");
    if (has_fp8_statistics(sources.runs)) export_fp8_csv(sources, directory / "fp8.csv");
    if (has_block_scales(sources.runs)) export_block_scales_csv(sources, directory / "fp8_block_scales.csv");
    if (!sources.runs.empty()) export_json(sources, directory / "runs.json");
}

}  // namespace tewb::ui

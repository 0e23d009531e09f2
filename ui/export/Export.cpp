#include "ui/export/Export.h"

#include <algorithm>
#include <cmath>

#include <QBuffer>
#include <QDateTime>
#include <QPainter>
#include <QTextDocument>

#include "core/common/Error.h"
#include "core/results/AtomicFile.h"
#include "core/results/Comparison.h"
#include "core/results/RunGroups.h"
#include "core/common/Statistics.h"
#include "core/common/TextTable.h"
#include "core/results/RecordCsv.h"
#include "ui/charts/MetricPlot.h"
#include "ui/common/ValidationLoss.h"
#include "ui/runs/RunCollection.h"

namespace tewb::ui {

namespace {

QString cell(const std::string& text) {
    return QString::fromStdString(text).toHtmlEscaped();
}

QString devicesLine(const RunCollection& runs) {
    QStringList devices;
    for (const RunCollection::Entry& e : runs.entries()) {
        const DeviceInfo& d = e.record.environment.device;
        const QString text = d.has_gpu() ? QString::fromStdString(d.gpu_name)
                                         : QStringLiteral("CPU: %1").arg(QString::fromStdString(d.cpu_model));
        if (!devices.contains(text)) devices << text;
    }
    return devices.join(QStringLiteral(", "));
}

// A group's held-out loss: its run's last evaluation, the median over its repeats; "-" on synthetic tokens.
std::string groupValLoss(const RunGroup& g, const std::vector<RunRecord>& summarized) {
    std::vector<double> losses;
    for (const std::size_t m : g.members) {
        if (const std::optional<ValLossPoint> val = final_val_loss(summarized[m])) losses.push_back(val->loss);
    }
    return losses.empty() ? std::string("-") : format_fixed(median_of(losses), 4);
}

}  // namespace

QString comparison_table_html(const RunCollection& runs, const std::vector<RunRecord>& summarized,
                              std::optional<std::size_t> baseline, const QString& textColour) {
    const std::vector<RunGroup> groups = group_runs(summarized, baseline);
    // Runs on synthetic tokens have no held-out loss: the column is there only when some run has one.
    const bool validation = std::any_of(summarized.begin(), summarized.end(), has_val_loss);
    QString html = QStringLiteral("<table cellspacing=0 cellpadding=3 style=\"color:%1\" width=100%><tr>").arg(textColour);
    for (const char* h : {"Run", "Status", "ms/step", "min–max ms", "over", "Tokens/s", "TFLOP/s", "MFU", "Peak memory",
                          "Final loss", "Val loss", "Speedup [95% interval]", "Memory ratio"}) {
        if (!validation && std::string_view(h) == "Val loss") continue;
        html += QStringLiteral("<th align=left>%1</th>").arg(QString::fromUtf8(h));
    }
    html += QStringLiteral("</tr>");
    for (const RunGroup& g : groups) {
        const std::size_t first = g.members.front();
        const RunRecord& r = summarized[first];
        const RunSummary& s = r.summary;
        const QColor colour = first < runs.entries().size() ? runs.entries()[first].colour : QColor(Qt::gray);
        const std::optional<double> mfu = s.mfu ? std::optional<double>(*s.mfu * 100) : std::nullopt;
        QString name = QString::fromStdString(display_name(r)).toHtmlEscaped();
        if (g.is_baseline && !name.contains(QStringLiteral("baseline"))) name += QStringLiteral(" (baseline)");
        QString status = QString::fromUtf8(to_string(r.status).data());
        for (const std::size_t m : g.members) {
            if (summarized[m].status != r.status) status = QStringLiteral("mixed");
        }
        html += QStringLiteral("<tr><td nowrap><span style=\"color:%1\">■</span> %2</td>").arg(colour.name(), name);
        const std::string speedup = g.is_baseline ? std::string("baseline") : speedup_text(g);
        std::vector<std::string> texts{
            status.toStdString(), format_fixed(g.centre_ms, 2),
            g.min_ms ? format_fixed(g.min_ms, 2) + "–" + format_fixed(g.max_ms, 2) : std::string("-"), g.sample_basis(),
            format_fixed(s.tokens_per_s, 0), format_tflops(s.tflops), format_fixed(mfu, 1, " %"),
            g.peak_mem_bytes ? format_bytes(g.peak_mem_bytes) + (r.execution.memory_metric == MemoryMetric::CpuPeakRss ? " RSS" : "")
                             : std::string("-"),
            format_fixed(g.final_loss, 4)};
        if (validation) texts.push_back(groupValLoss(g, summarized));
        texts.push_back(speedup);
        texts.push_back(format_fixed(g.memory_ratio, 2, "x"));
        for (const std::string& text : texts) html += QStringLiteral("<td nowrap>%1</td>").arg(cell(text));
        html += QStringLiteral("</tr>");
    }
    return html + QStringLiteral("</table>");
}

QImage render_chart(const MetricSpec& spec, const PlotOptions& options, const RunCollection& runs, QSize logical, qreal scale,
                    bool legend) {
    MetricPlot plot(spec);
    plot.setOptions(options);
    return plot.renderImage(runs, logical, scale, legend);
}

QImage render_dashboard(const RunCollection& runs, const std::vector<RunRecord>& summarized,
                        std::optional<std::size_t> baseline, const PlotOptions& options, QSize logical, qreal scale,
                        DashboardContents* contents) {
    const QColor background = options.dark ? QColor(0x26, 0x26, 0x26) : QColor(Qt::white);
    const QColor text = options.dark ? QColor(0xee, 0xee, 0xee) : QColor(0x20, 0x20, 0x20);
    const int margin = 16;
    const int headerHeight = 56;
    const qreal innerWidth = logical.width() - 2 * margin;

    // Sizes first: one legend for the three charts (every run, wrapped), the table at its own height, and
    // the charts take what is left, so the image has no empty band; a long table makes the image taller.
    MetricPlot probe(loss_metric());
    probe.setOptions(options);
    probe.refresh(runs);
    const qreal legendHeight = legend_height(probe.traces(), innerWidth);
    QTextDocument table;
    QFont tableFont;
    tableFont.setPixelSize(13);
    table.setDefaultFont(tableFont);
    table.setHtml(comparison_table_html(runs, summarized, baseline, text.name()));
    table.setTextWidth(innerWidth);
    const int tableHeight = static_cast<int>(std::ceil(table.size().height()));
    constexpr int kMinChartHeight = 360;
    const int chartHeight =
        std::max(kMinChartHeight, logical.height() - headerHeight - static_cast<int>(legendHeight) - tableHeight - 2 * margin);
    const QSize size(logical.width(), headerHeight + chartHeight + static_cast<int>(legendHeight) + tableHeight + 2 * margin);

    QImage image(size * scale, QImage::Format_ARGB32_Premultiplied);
    image.fill(background);
    QPainter painter(&image);
    painter.setRenderHint(QPainter::Antialiasing);
    painter.scale(scale, scale);

    QFont titleFont = painter.font();
    titleFont.setPixelSize(22);
    titleFont.setBold(true);
    painter.setFont(titleFont);
    painter.setPen(text);
    painter.drawText(QRect(margin, 8, size.width() - 2 * margin, 28), Qt::AlignLeft | Qt::AlignVCenter,
                     runs.entries().size() == 1 ? QStringLiteral("TE Workbench — 1 run")
                                                : QStringLiteral("TE Workbench — %1 runs").arg(runs.entries().size()));
    QFont small = painter.font();
    small.setPixelSize(13);
    small.setBold(false);
    painter.setFont(small);
    painter.drawText(QRect(margin, 34, size.width() - 2 * margin, 18), Qt::AlignLeft | Qt::AlignVCenter,
                     QStringLiteral("%1 · %2 · dashed: warm-up steps")
                         .arg(devicesLine(runs), QDateTime::currentDateTimeUtc().toString(Qt::ISODate)));

    const std::vector<MetricSpec> specs{loss_metric(), step_ms_metric(), memory_metric()};
    const int chartWidth = static_cast<int>(innerWidth) / static_cast<int>(specs.size());
    for (std::size_t i = 0; i < specs.size(); ++i) {
        // Each chart renders at the dashboard's own scale, then lands 1:1 in the scaled painter.
        const QImage chart = render_chart(specs[i], options, runs, QSize(chartWidth, chartHeight), scale, false);
        painter.drawImage(QRectF(margin + static_cast<int>(i) * chartWidth, headerHeight, chartWidth, chartHeight), chart);
    }
    const QStringList labels =
        paint_legend(painter, probe.traces(), QRectF(margin, headerHeight + chartHeight, innerWidth, legendHeight), options.dark);

    painter.save();
    painter.translate(margin, headerHeight + chartHeight + legendHeight + margin);
    table.drawContents(&painter, QRectF(0, 0, innerWidth, tableHeight));
    painter.restore();
    painter.end();
    if (contents) {
        contents->legend_labels = labels;
        contents->logical_size = size;
    }
    return image;
}

void check_png_path(const std::filesystem::path& path) {
    const std::string extension = path.extension().string();
    if (!extension.empty() && QString::fromStdString(extension).toLower() != QLatin1String(".png")) {
        throw ConfigError(path.string() + ": '" + extension +
                          "' names another image format, and the image is written as PNG; allowed: a .png file (in any "
                          "case) or a name without an extension");
    }
}

void write_png(const std::filesystem::path& path, const QImage& image) {
    check_png_path(path);
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    if (image.isNull() || !image.save(&buffer, "PNG")) {
        throw DataError(path.string() + ": the image could not be encoded as PNG");
    }
    write_file_atomically(path, std::string_view(bytes.constData(), static_cast<std::size_t>(bytes.size())));
}

}  // namespace tewb::ui

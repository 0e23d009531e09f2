#include "ui/export/Export.h"

#include <QBuffer>
#include <QDateTime>
#include <QPainter>
#include <QTextDocument>

#include "core/common/Error.h"
#include "core/results/AtomicFile.h"
#include "core/results/Comparison.h"
#include "core/common/TextTable.h"
#include "core/results/RecordCsv.h"
#include "ui/charts/MetricPlot.h"
#include "ui/runs/RunCollection.h"

namespace tewb::ui {

namespace {

QString cell(const std::string& text) {
    return QString::fromStdString(text).toHtmlEscaped();
}

QString tableHtml(const RunCollection& runs, const std::vector<RunRecord>& summarized, std::optional<std::size_t> baseline,
                  const QString& textColour) {
    const std::vector<ComparisonRow> rows = compare_runs(summarized, baseline);
    QString html = QStringLiteral("<table cellspacing=0 cellpadding=3 style=\"color:%1\" width=100%><tr>").arg(textColour);
    for (const char* h : {"Run", "Status", "Mean ms", "Median ms", "p90 ms", "Tokens/s", "TFLOP/s", "MFU", "Peak memory",
                          "Final loss", "Speedup", "Memory ratio"}) {
        html += QStringLiteral("<th align=left>%1</th>").arg(QString::fromUtf8(h));
    }
    html += QStringLiteral("</tr>");
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const RunRecord& r = *rows[i].run;
        const RunSummary& s = r.summary;
        const QColor colour = i < runs.entries().size() ? runs.entries()[i].colour : QColor(Qt::gray);
        const std::optional<double> mfu = s.mfu ? std::optional<double>(*s.mfu * 100) : std::nullopt;
        html += QStringLiteral("<tr><td><span style=\"color:%1\">■</span> %2%3</td>")
                    .arg(colour.name(), cell(r.config.name), baseline == i && r.config.name.find("baseline") == std::string::npos ? QStringLiteral(" (baseline)")
                                                                                        : QString());
        for (const std::string& text :
             {std::string(to_string(r.status)), format_fixed(s.mean_ms, 2), format_fixed(s.median_ms, 2),
              format_fixed(s.p90_ms, 2), format_fixed(s.tokens_per_s, 0), format_fixed(s.tflops, 2),
              format_fixed(mfu, 1, " %"), s.peak_mem_bytes ? format_bytes(s.peak_mem_bytes) : std::string("-"),
              format_fixed(s.final_loss, 4), format_fixed(rows[i].speedup, 2, "x"), format_fixed(rows[i].memory_ratio, 2, "x")}) {
            html += QStringLiteral("<td>%1</td>").arg(cell(text));
        }
        html += QStringLiteral("</tr>");
    }
    return html + QStringLiteral("</table>");
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

}  // namespace

QImage render_chart(const MetricSpec& spec, const PlotOptions& options, const RunCollection& runs, QSize logical, qreal scale) {
    MetricPlot plot(spec);
    plot.setOptions(options);
    return plot.renderImage(runs, logical, scale);
}

QImage render_dashboard(const RunCollection& runs, const std::vector<RunRecord>& summarized,
                        std::optional<std::size_t> baseline, const PlotOptions& options, QSize logical, qreal scale) {
    const QColor background = options.dark ? QColor(0x26, 0x26, 0x26) : QColor(Qt::white);
    const QColor text = options.dark ? QColor(0xee, 0xee, 0xee) : QColor(0x20, 0x20, 0x20);
    QImage image(logical * scale, QImage::Format_ARGB32_Premultiplied);
    image.fill(background);
    QPainter painter(&image);
    painter.setRenderHint(QPainter::Antialiasing);
    painter.scale(scale, scale);

    const int margin = 16;
    const int headerHeight = 56;
    QFont titleFont = painter.font();
    titleFont.setPixelSize(22);
    titleFont.setBold(true);
    painter.setFont(titleFont);
    painter.setPen(text);
    painter.drawText(QRect(margin, 8, logical.width() - 2 * margin, 28), Qt::AlignLeft | Qt::AlignVCenter,
                     runs.entries().size() == 1 ? QStringLiteral("TE Workbench — 1 run")
                                                : QStringLiteral("TE Workbench — %1 runs").arg(runs.entries().size()));
    QFont small = painter.font();
    small.setPixelSize(13);
    small.setBold(false);
    painter.setFont(small);
    painter.drawText(QRect(margin, 34, logical.width() - 2 * margin, 18), Qt::AlignLeft | Qt::AlignVCenter,
                     QStringLiteral("%1 · %2 · dashed: warm-up steps")
                         .arg(devicesLine(runs), QDateTime::currentDateTimeUtc().toString(Qt::ISODate)));

    const std::vector<MetricSpec> specs{loss_metric(), step_ms_metric(), memory_metric()};
    const int chartWidth = (logical.width() - 2 * margin) / static_cast<int>(specs.size());
    const int chartHeight = (logical.height() - headerHeight) * 55 / 100;
    for (std::size_t i = 0; i < specs.size(); ++i) {
        // Each chart renders at the dashboard's own scale, then lands 1:1 in the scaled painter.
        const QImage chart = render_chart(specs[i], options, runs, QSize(chartWidth, chartHeight), scale);
        painter.drawImage(QRectF(margin + static_cast<int>(i) * chartWidth, headerHeight, chartWidth, chartHeight), chart);
    }

    QTextDocument table;
    QFont tableFont = small;
    tableFont.setPixelSize(13);
    table.setDefaultFont(tableFont);
    table.setHtml(tableHtml(runs, summarized, baseline, text.name()));
    table.setTextWidth(logical.width() - 2 * margin);
    painter.save();
    painter.translate(margin, headerHeight + chartHeight + 12);
    table.drawContents(&painter, QRectF(0, 0, logical.width() - 2 * margin, logical.height() - headerHeight - chartHeight - 24));
    painter.restore();
    painter.end();
    return image;
}

void write_png(const std::filesystem::path& path, const QImage& image) {
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    if (image.isNull() || !image.save(&buffer, "PNG")) {
        throw DataError(path.string() + ": the image could not be encoded as PNG");
    }
    write_file_atomically(path, std::string_view(bytes.constData(), static_cast<std::size_t>(bytes.size())));
}

}  // namespace tewb::ui

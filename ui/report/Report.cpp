#include "ui/report/Report.h"

#include <algorithm>

#include <QBuffer>
#include <QDateTime>
#include <QFont>
#include <QImage>
#include <QPageLayout>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QTextDocument>
#include <QUrl>

#include "core/common/Error.h"
#include "core/device/Capability.h"
#include "core/results/AtomicFile.h"
#include "core/results/Fp8Summary.h"
#include "core/results/ReportText.h"
#include "core/results/RunGroups.h"
#include "ui/charts/BlockScaleHistogram.h"
#include "ui/charts/Fp8Inspector.h"
#include "ui/charts/MetricPlot.h"
#include "ui/common/Theme.h"
#include "ui/export/Export.h"
#include "ui/report/ReportLayout.h"
#include "ui/report/ReportModelData.h"
#include "ui/runs/RunCollection.h"

namespace tewb::ui {

namespace {

// A capability badge whose colour and words agree: green "TE capable", red "Not TE capable"; the fallback
// badge is a warning, orange "Fallback" when on, green "No fallback" when off.
QString badge(const QString& text, bool on, const std::string& reason, bool warning = false) {
    const QString words = on ? text : warning ? QStringLiteral("No ") + text.toLower() : QStringLiteral("Not ") + text;
    QString colour = on ? QStringLiteral("#2e7d32") : QStringLiteral("#c62828");
    if (warning) colour = on ? QStringLiteral("#e65100") : QStringLiteral("#2e7d32");
    return QStringLiteral("<span style=\"background-color:%1; color:white\">&nbsp;%2&nbsp;</span> <small>%3</small><br>")
        .arg(colour, words.toHtmlEscaped(), esc(reason));
}

// The machines, their capability badges, then the model and the data the runs trained.
QString machineSection(const std::vector<RunRecord>& runs) {
    QString html = QStringLiteral("<h2>Machine and model</h2>");
    std::vector<std::string> seen;
    for (const RunRecord& r : runs) {
        const DeviceInfo& d = r.environment.device;
        const std::string key = r.environment.hostname + "|" + d.gpu_name + "|" + d.cpu_model;
        if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
        seen.push_back(key);
        const Capability cap = classify(d);
        html += QStringLiteral("<p><b>%1</b>").arg(esc(r.environment.hostname.empty() ? std::string("machine") : r.environment.hostname));
        html += d.has_gpu() ? QStringLiteral(": %1, compute capability %2, %3 SMs")
                                  .arg(esc(d.gpu_name), esc(d.compute_capability->to_string()))
                                  .arg(d.sm_count)
                            : cpu_machine(d) ? QStringLiteral(": %1 %2").arg(esc(no_gpu_words(d)), esc(what_still_works_without_gpu()))
                                             : QStringLiteral(": %1 %2 <small>(%3)</small>")
                                                   .arg(esc(no_gpu_words(d)), esc(what_still_works_without_gpu()), esc(d.gpu_error));
        html += QStringLiteral("<br>CPU %1 (%2 threads); driver %3, CUDA runtime %4, cuBLASLt %5, LibTorch %6; te-workbench %7 (%8)<br>")
                    .arg(esc(d.cpu_model))
                    .arg(d.cpu_threads)
                    .arg(esc(d.driver_version.empty() ? "-" : d.driver_version), esc(d.cuda_runtime_version.empty() ? "-" : d.cuda_runtime_version),
                         esc(d.cublaslt_version.empty() ? "-" : d.cublaslt_version), esc(d.libtorch_version),
                         esc(r.environment.build.version), esc(r.environment.build.commit));
        html += badge(QStringLiteral("TE capable"), cap.te_capable, cap.te_reason);
        html += badge(QStringLiteral("FP8 capable"), cap.fp8_capable, cap.fp8_reason);
        html += badge(cpu_machine(d) ? QStringLiteral("CPU") : QStringLiteral("Fallback"), cap.mode == Mode::Fallback,
                      cap.fallback_reason.empty() ? std::string("not in fallback") : cap.fallback_reason, true);
        html += QStringLiteral("</p>");
    }
    return html + model_and_data_html(runs);
}

QString runsSection(const RunCollection& runs, const std::vector<RunRecord>& records) {
    QString html = QStringLiteral("<h2>Runs</h2>");
    for (std::size_t i = 0; i < records.size(); ++i) {
        const RunRecord& r = records[i];
        const QColor colour = i < runs.entries().size() ? runs.entries()[i].colour : QColor(Qt::gray);
        QString name = esc(display_name(r));
        if (r.repeat) name += QStringLiteral(" (repeat %1 of %2)").arg(r.repeat->index).arg(r.repeat->count);
        html += QStringLiteral("<p><span style=\"color:%1\">■</span> <b>%2</b> — %3, %4 on %5, created %6")
                    .arg(colour.name(), name, esc(std::string(to_string(r.config.backend))),
                         esc(std::string(to_string(r.config.precision))), esc(r.execution.device), esc(r.created_at));
        const std::vector<std::string> labels = honesty_labels(r);
        for (const std::string& label : labels) {
            html += QStringLiteral(" <span style=\"background-color:#e65100; color:white\">&nbsp;%1&nbsp;</span>").arg(esc(label));
        }
        html += QStringLiteral("<br>implementation: %1").arg(esc(r.execution.implementation));
        if (const std::string path = te_path_words(r); !path.empty()) {
            html += QStringLiteral("; %1").arg(esc(path));
            if (!r.execution.te_impl.empty()) {
                html += QStringLiteral(", %1").arg(esc(fully_fused(r.execution) ? "fully fused, no fallbacks"
                                                                                 : fallback_summary(r.execution)));
            }
            for (const std::string& line : fallback_lines(r.execution)) {
                html += QStringLiteral("<br>&nbsp;&nbsp;fallback: %1").arg(esc(line));
            }
        }
        if (r.execution.cuda_graph) html += QStringLiteral("; CUDA graph (%1)").arg(esc(r.execution.cuda_graph_note));
        if (!r.execution.attention_backend.empty()) {
            html += QStringLiteral("; attention: %1").arg(esc(r.execution.attention_backend));
        }
        html += QStringLiteral("<br><code>%1</code></p>").arg(esc(command_line_for(r.config)));
    }
    return html;
}

// A figure of the report: its heading, the image `name` at width × height and the caption's text after "Figure N:".
QString imageFigure(int figure, const QString& heading, const QString& name, int width, int height, const QString& caption) {
    return QStringLiteral("<p><b>%1</b></p><p><img src=\"%2\" width=\"%3\" height=\"%4\"></p><p><i>%5 %6</i></p>")
        .arg(figure_heading_text(figure, heading), name)
        .arg(width)
        .arg(height)
        .arg(figure_caption_prefix(figure), caption);
}

// One FP8 run's heat map of its casts' SNR as a figure: every slot labelled where a page's height allows
// (the map says when only some rows are), on paper colours whatever the window's theme.
QString heatMapFigure(const RunRecord& r, const QString& name, ReportContent& report, int figure) {
    constexpr int kWidth = 1000;
    constexpr int kTallest = 560;  // with its heading and caption, a landscape A4 page's height
    Fp8HeatMap map;
    map.setPalette(light_palette());
    map.show(&r, Fp8Metric::SnrDb);
    const int height = std::min(map.fullHeight(), kTallest);
    report.images.emplace_back(name, map.render(QSize(kWidth, height), 2.0));
    return imageFigure(figure, QStringLiteral("FP8 quantization SNR, %1").arg(esc(display_name(r))), name, kWidth, height,
                       QStringLiteral("quantization SNR in dB of each FP8 cast of %1 (rows: module · role; columns: steps), "
                                      "dark blue low, yellow high, over the range printed beside the colour bar; grey: no "
                                      "value.")
                           .arg(esc(display_name(r))));
}

// An inspected block-scaled run's block scales per slot role (its slots' histograms added together), one above the
// other, as a figure.
QString blockScalesFigure(const RunRecord& r, const QString& name, ReportContent& report, int figure) {
    constexpr int kWidth = 1000;
    constexpr int kPanel = 170;
    const SlotRole roles[] = {SlotRole::Input, SlotRole::Weight, SlotRole::GradOutput};
    QImage image(QSize(kWidth, kPanel * 3) * 2, QImage::Format_ARGB32_Premultiplied);
    {
        QPainter painter(&image);
        BlockScaleHistogram panel;
        panel.setPalette(light_palette());
        for (int i = 0; i < 3; ++i) {
            panel.show(merged_block_scales(r, roles[i]), QStringLiteral("all %1 slots").arg(QString::fromUtf8(to_string(roles[i]).data())));
            painter.drawImage(QPoint(0, i * kPanel * 2), panel.render(QSize(kWidth, kPanel), 2.0));
        }
    }
    report.images.emplace_back(name, image);
    return imageFigure(figure, QStringLiteral("Block scales, %1").arg(esc(display_name(r))), name, kWidth, kPanel * 3,
                       QStringLiteral("how many blocks of %1's casts had their scale (the factor a block's stored values are "
                                      "multiplied by) in each binade 2^e … 2^(e+1), over every step, for its input, weight "
                                      "and grad-output slots; blocks whose values were all zero have no scale and are "
                                      "counted apart.")
                           .arg(esc(display_name(r))));
}

// The FP8 digest of each FP8 run, and for an inspected run the heat map of its casts' SNR (slot × step) and, under
// a recipe with block scales, its block scales' histograms.
QString fp8Section(const std::vector<RunRecord>& records, ReportContent& report, int& figure) {
    QString html;
    for (std::size_t i = 0; i < records.size(); ++i) {
        const RunRecord& r = records[i];
        if (r.fp8_slots.empty()) continue;
        html += QStringLiteral("<h3>%1</h3><pre>%2</pre>").arg(esc(display_name(r)), esc(render_fp8_summary(r)));
        const bool inspected = std::any_of(r.steps.begin(), r.steps.end(), [](const StepMetrics& s) {
            return std::any_of(s.fp8.begin(), s.fp8.end(), [](const Fp8SlotSample& x) { return x.rel_mse.has_value(); });
        });
        if (inspected) html += heatMapFigure(r, QStringLiteral("fp8-heatmap-%1.png").arg(i), report, ++figure);
        if (!r.fp8_block_scales.empty()) {
            html += blockScalesFigure(r, QStringLiteral("fp8-block-scales-%1.png").arg(i), report, ++figure);
        }
    }
    return html.isEmpty() ? html : QStringLiteral("<h2>FP8 digest</h2>") + html;
}

// Each traced run's ten largest kernels (te-bench run --profile), with what the rows are and how much of the
// profiled step they cover.
QString kernelsSection(const std::vector<RunRecord>& records) {
    constexpr std::size_t kShown = 10;
    QString html;
    for (const RunRecord& r : records) {
        if (!r.execution.kernel_profile) continue;
        const KernelProfile& p = *r.execution.kernel_profile;
        html += QStringLiteral("<h3>%1</h3><p><small>step %2 (after the timed steps, not in their statistics): %3 ms; %4; "
                               "its %5 kernels take %6% of the step; the largest:</small></p>")
                    .arg(esc(display_name(r)))
                    .arg(p.step)
                    .arg(QString::number(p.step_ms, 'f', 3), esc(p.source))
                    .arg(p.kernels.size())
                    .arg(QString::number(p.step_ms > 0 ? p.total_us() / (p.step_ms * 10.0) : 0.0, 'f', 1));
        html += QStringLiteral("<table border=1 cellspacing=0 cellpadding=3><tr><th>kernel</th><th>launches</th><th>total µs</th>"
                               "<th>mean µs</th><th>share</th></tr>");
        for (std::size_t i = 0; i < p.kernels.size() && i < kShown; ++i) {
            const KernelTime& k = p.kernels[i];
            html += QStringLiteral("<tr><td><code>%1</code></td><td align=right>%2</td><td align=right>%3</td><td align=right>%4</td>"
                                   "<td align=right>%5%</td></tr>")
                        .arg(esc(k.name))
                        .arg(k.launches)
                        .arg(QString::number(k.total_us, 'f', 1), QString::number(k.mean_us(), 'f', 1),
                             QString::number(p.share_of_step(k) * 100.0, 'f', 1));
        }
        html += QStringLiteral("</table>");
    }
    return html.isEmpty() ? html : QStringLiteral("<h2>Top kernels</h2>") + html;
}

// The loss, step-time and memory charts side by side, the runs' legend as text under them, and the caption.
// Rendered at the size they are printed (a landscape A4 page is about 1020 px wide at 96 dpi), so their text
// is as large on paper as on screen (about 9 pt).
QString chartsFigure(const RunCollection& runs, const PlotOptions& options, ReportContent& report, int figure) {
    const QSize size(336, 290);
    QString images;
    QStringList axes;
    std::vector<MetricPlot::Trace> traces;
    for (const MetricSpec& spec : {loss_metric(), step_ms_metric(), memory_metric()}) {
        const QString name = QStringLiteral("chart-%1.png").arg(spec.id);
        report.images.emplace_back(name, render_chart(spec, options, runs, size, 3.0, false));
        images += QStringLiteral("<img src=\"%1\" width=\"%2\" height=\"%3\"> ").arg(name).arg(size.width()).arg(size.height());
        MetricPlot plot(spec);
        plot.refresh(runs);
        const QString unit = plot.axes(Qt::Vertical).isEmpty() ? spec.unit : plot.axes(Qt::Vertical).front()->titleText();
        axes << QStringLiteral("%1 (%2)").arg(spec.title.toLower(), unit);
        if (traces.empty()) traces = plot.traces();
    }
    const bool validation = std::any_of(traces.begin(), traces.end(), [](const MetricPlot::Trace& t) { return t.companion; });
    QStringList legend;
    for (const MetricPlot::Trace& t : traces) {
        legend << QStringLiteral("<span style=\"color:%1\">■</span>&nbsp;%2").arg(t.colour.name(), t.name.toHtmlEscaped());
    }
    return QStringLiteral("<p><b>%1</b></p><p>%2</p><p>%3</p>"
                          "<p><i>%4 %5 of every run against the training step; dashed: warm-up steps;%6 repeats: the "
                          "median line over a min–max band; the memory axis starts at zero.</i></p>")
        .arg(figure_heading_text(figure, QStringLiteral("Loss, step time and peak memory per step")), images,
             legend.join(QStringLiteral(" &nbsp; ")), figure_caption_prefix(figure), axes.join(QStringLiteral(", ")).toHtmlEscaped(),
             validation ? QStringLiteral(" dotted with dots: the validation loss (the token file's held-out tail);") : QString());
}

QByteArray pngBytes(const QImage& image) {
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    image.save(&buffer, "PNG");
    return bytes;
}

}  // namespace

ReportContent build_report(const RunCollection& runs, const std::vector<RunRecord>& summarized,
                           std::optional<std::size_t> baseline, const PlotOptions& options) {
    ReportContent report;
    const std::vector<RunGroup> groups = group_runs(summarized, baseline);
    report.headline = QString::fromStdString(report_headline(summarized, groups));
    PlotOptions light = options;
    light.dark = false;  // paper is white
    int figure = 0;
    const QString charts = chartsFigure(runs, light, report, ++figure);
    QString html = QStringLiteral("<html><head><meta charset=\"utf-8\"><title>%1</title></head><body style=\"font-family:sans-serif\">")
                       .arg(report.headline.toHtmlEscaped());
    html += QStringLiteral("<h1>TE Workbench report</h1><p style=\"font-size:large\"><b>%1</b></p>").arg(report.headline.toHtmlEscaped());
    html += QStringLiteral("<p>%1</p>").arg(QString::fromStdString(quality_sentence(summarized)).toHtmlEscaped());
    for (const std::string& sentence : validation_sentences(summarized)) {
        html += QStringLiteral("<p>%1</p>").arg(QString::fromStdString(sentence).toHtmlEscaped());
    }
    html += QStringLiteral("<p><small>%1 run(s) · written %2 · speedup = baseline ms/step ÷ run ms/step; intervals are 95% "
                           "bootstrap intervals (repeats: over the repeats' mean ms/step; one run: over its timed steps); "
                           "\"not significant\": the interval contains 1.0</small></p>")
                .arg(summarized.size())
                .arg(QDateTime::currentDateTimeUtc().toString(Qt::ISODate));
    html += machineSection(summarized);
    html += QStringLiteral("<h2>Comparison</h2>") + comparison_table_html(runs, summarized, baseline, QStringLiteral("#202020"));
    html += charts;
    html += fp8Section(summarized, report, figure);
    html += kernelsSection(summarized);
    // Last: its text fills the room a figure that moved to the next page leaves (ReportLayout).
    html += runsSection(runs, summarized);
    html += QStringLiteral("</body></html>");
    report.html = html;
    return report;
}

ReportFormat report_format(const std::filesystem::path& path) {
    const std::string extension = path.extension().string();
    const QString lower = QString::fromStdString(extension).toLower();
    if (lower == QLatin1String(".pdf")) return ReportFormat::Pdf;
    if (lower == QLatin1String(".html") || lower == QLatin1String(".htm")) return ReportFormat::Html;
    throw ConfigError(path.string() + ": unknown report format " +
                      (extension.empty() ? std::string("(no extension)") : "'" + extension + "'") +
                      "; allowed: .pdf, .html or .htm, in any case");
}

void write_report(const std::filesystem::path& path, const ReportContent& report) {
    const ReportFormat format = report_format(path);
    if (format == ReportFormat::Html) {
        QString html = report.html;
        for (const auto& [name, image] : report.images) {
            html.replace(QStringLiteral("src=\"%1\"").arg(name),
                         QStringLiteral("src=\"data:image/png;base64,%1\"").arg(QString::fromLatin1(pngBytes(image).toBase64())));
        }
        const QByteArray utf8 = html.toUtf8();
        write_file_atomically(path, std::string_view(utf8.constData(), static_cast<std::size_t>(utf8.size())));
        return;
    }
    QTextDocument document;
    QFont font(QStringLiteral("DejaVu Sans"));
    font.setPointSizeF(7.5);  // the comparison table has a dozen columns: at 7.5 pt they fit a landscape A4 page
    document.setDefaultFont(font);
    for (const auto& [name, image] : report.images) document.addResource(QTextDocument::ImageResource, QUrl(name), image);
    document.setHtml(report.html);
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    {
        QPdfWriter writer(&buffer);
        writer.setTitle(report.headline);
        writer.setCreator(QStringLiteral("TE Workbench"));
        writer.setPageSize(QPageSize(QPageSize::A4));
        writer.setPageOrientation(QPageLayout::Landscape);  // the comparison table is wide
        writer.setPageMargins(QMarginsF(12, 12, 12, 12), QPageLayout::Millimeter);
        writer.setResolution(150);
        // Laid out at 96 pixels per inch on the page's printable area; print() scales it to the writer
        // (without a page size it would add its own 2 cm margins and squeeze the table).
        document.setPageSize(writer.pageLayout().paintRectPixels(96).size());
        keep_figures_on_pages(document);
        // After the figures (they move text); a heading's break shifts what follows, so the figures are checked again.
        if (keep_headings_with_what_follows(document) > 0) keep_figures_on_pages(document);
        document.print(&writer);
    }
    if (bytes.isEmpty()) throw DataError(path.string() + ": the PDF could not be produced");
    write_file_atomically(path, std::string_view(bytes.constData(), static_cast<std::size_t>(bytes.size())));
}

}  // namespace tewb::ui

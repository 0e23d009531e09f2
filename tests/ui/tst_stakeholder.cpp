// What people hand over: the dashboard export (every run in the legend, no empty band), the report (PDF
// and HTML), repeats drawn as a median with a band and their intervals in the table, the FP8 break-even
// sweep, and the window remembering its layout and setup.
#include <QtTest>

#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>

#include <memory>

#include "WindowTestSupport.h"
#include "core/common/Error.h"
#include "core/results/ReportText.h"
#include "core/results/RunGroups.h"
#include "ui/charts/BlockScaleHistogram.h"
#include "ui/charts/ChartsPanel.h"
#include "ui/charts/Fp8Inspector.h"
#include "ui/charts/MetricChartView.h"
#include "ui/charts/MetricPlot.h"
#include "ui/export/Export.h"
#include "ui/report/Report.h"
#include "ui/report/ReportModelData.h"
#include "ui/runs/RunCollection.h"
#include "ui/runs/RunController.h"
#include "ui/runs/RunQueueModel.h"
#include "ui/setup/RunSetupPanel.h"
#include "ui/sweep/SweepPanel.h"
#include "ui/table/ComparisonModel.h"
#include "ui/table/ComparisonPanel.h"
#include "ui/window/MainWindow.h"

using namespace tewb;
using namespace tewb::ui;

namespace {

using test::make_window;

// Five runs with names as long as the comparison plan's, like `--demo compare`.
void add_compare_runs(RunCollection& runs) {
    const char* names[] = {"torch fp32 cpu (baseline)", "torch bf16 cpu", "te fp32 cpu", "te bf16 cpu", "te fp8 cpu"};
    double ms = 10;
    for (const char* name : names) {
        RunRecord r = test::synthetic_record(name, 60, 5, ms);
        r.execution.device = "cpu";
        runs.add(r);
        ms += 1.5;
    }
}

// Rows at the bottom of the image that hold only the background colour.
int empty_rows_at_bottom(const QImage& image) {
    const QRgb background = image.pixel(image.width() - 1, image.height() - 1);
    int rows = 0;
    for (int y = image.height() - 1; y >= 0; --y) {
        for (int x = 0; x < image.width(); x += 3) {
            if (image.pixel(x, y) != background) return rows;
        }
        ++rows;
    }
    return rows;
}

QString run_tool(const QString& program, const QStringList& arguments) {
    QProcess p;
    p.start(program, arguments);
    if (!p.waitForFinished(60'000) || p.exitCode() != 0) return {};
    return QString::fromUtf8(p.readAllStandardOutput());
}

// A fake trainer: the step time depends on the backend, so repeats group and speedups are known.
RunRecord fake_train(const ResolvedRun& resolved_run, const TrainerCallbacks&, const std::atomic<bool>*) {
    const RunConfig& config = resolved_run.config;
    static int calls = 0;
    const double ms = (config.backend == Backend::Te ? 5.0 : 10.0) + 0.1 * (++calls % 3);
    RunRecord r = test::synthetic_record(config.name.empty() ? "run" : config.name, config.total_steps(), config.warmup, ms);
    r.config = config;
    r.execution.device = "cpu";
    for (StepMetrics& s : r.steps) s.step_ms = ms;
    r.summary.mean_ms = ms;
    return r;
}

}  // namespace

class TestStakeholder : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void dashboardLegendListsEveryRunAndLeavesNoEmptyBand() {
        RunCollection runs;
        add_compare_runs(runs);
        std::vector<RunRecord> records = runs.records();
        DashboardContents contents;
        const QImage image = render_dashboard(runs, records, 0, PlotOptions{}, kDashboardExportSize, 1.0, &contents);
        QStringList names;
        for (const RunCollection::Entry& e : runs.entries()) names << QString::fromStdString(e.record.config.name);
        QCOMPARE(contents.legend_labels, names);
        // The charts take the height the table leaves: at most a margin is blank at the bottom.
        const int blank = empty_rows_at_bottom(image);
        QVERIFY2(blank < image.height() / 20, qPrintable(QStringLiteral("%1 blank rows of %2").arg(blank).arg(image.height())));
        // Many runs: the legend wraps and the image grows rather than cutting a name or the table.
        for (int i = 0; i < 12; ++i) runs.add(test::synthetic_record("extra run number " + std::to_string(i), 20, 2, 7));
        records = runs.records();
        const QImage tall = render_dashboard(runs, records, 0, PlotOptions{}, kDashboardExportSize, 1.0, &contents);
        QCOMPARE(contents.legend_labels.size(), static_cast<qsizetype>(runs.entries().size()));
        QVERIFY(tall.height() >= kDashboardExportSize.height());
        QVERIFY(empty_rows_at_bottom(tall) < tall.height() / 20);
    }

    void chartExportLegendListsEveryRun() {
        RunCollection runs;
        add_compare_runs(runs);
        MetricPlot plot(loss_metric());
        plot.refresh(runs);
        QImage image(600, 400, QImage::Format_ARGB32_Premultiplied);
        image.fill(Qt::white);
        QPainter painter(&image);
        const QStringList drawn = paint_legend(painter, plot.traces(), QRectF(0, 300, 600, legend_height(plot.traces(), 600)), false);
        QCOMPARE(drawn.size(), static_cast<qsizetype>(runs.entries().size()));
        QVERIFY(legend_height(plot.traces(), 600) > legend_height(plot.traces(), 3000));  // wraps when narrow
    }

    void reportAsPdfAndHtml() {
        RunCollection runs;
        add_compare_runs(runs);
        std::vector<RunRecord> records = runs.records();
        records.back().execution.fp8_emulated = true;
        KernelProfile traced;  // a run traced with --profile: its ten largest kernels are listed
        traced.step = 41;
        traced.source = "CUDA kernels, copies and sets (CUPTI)";
        traced.step_ms = 1.0;
        traced.trace_path = "trace.json";
        for (int i = 0; i < 12; ++i) traced.kernels.push_back({"kernel_number_" + std::to_string(i), 2, 60.0 - i});
        records.front().execution.kernel_profile = traced;
        const ReportContent report = build_report(runs, records, 0, PlotOptions{});
        const std::string headline = report_headline(records, group_runs(records, 0));
        QCOMPARE(report.headline, QString::fromStdString(headline));
        QVERIFY(report.headline.contains(QStringLiteral("faster than the torch fp32 cpu baseline")) ||
                report.headline.contains(QStringLiteral("Nothing beat")));
        QTemporaryDir dir;
        const QString html = dir.filePath(QStringLiteral("report.html"));
        write_report(html.toStdString(), report);
        QFile file(html);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(file.readAll());
        for (const RunRecord& r : records) QVERIFY2(text.contains(QString::fromStdString(r.config.name).toHtmlEscaped()), r.config.name.c_str());
        QVERIFY(text.contains(report.headline.toHtmlEscaped()));
        QCOMPARE(text.count(QStringLiteral("src=\"data:image/png;base64,")), 3);  // self-contained: the charts inlined
        QVERIFY(text.contains(QStringLiteral("emulated FP8")));
        QVERIFY(text.contains(QStringLiteral("shorter warm-up than the seed")));
        QVERIFY(text.contains(QStringLiteral("te-bench run --device")));
        QVERIFY(text.contains(QStringLiteral("<h2>Top kernels</h2>")));
        QVERIFY(text.contains(QStringLiteral("kernel_number_9")) && !text.contains(QStringLiteral("kernel_number_10")));
        QVERIFY2(text.contains(QStringLiteral("its 12 kernels take 65.4% of the step")), "all twelve: 654 of 1000 µs");

        const QString pdf = dir.filePath(QStringLiteral("report.pdf"));
        write_report(pdf.toStdString(), report);
        const QString info = run_tool(QStringLiteral("pdfinfo"), {pdf});
        QVERIFY2(!info.isEmpty(), "pdfinfo (poppler-utils, installed by packaging/setup-deps.sh) could not read the PDF");
        const QRegularExpressionMatch pages = QRegularExpression(QStringLiteral("Pages:\\s+(\\d+)")).match(info);
        QVERIFY(pages.hasMatch());
        QVERIFY2(pages.captured(1).toInt() >= 2 && pages.captured(1).toInt() <= 6, qPrintable(info));
        const QString words = run_tool(QStringLiteral("pdftotext"), {QStringLiteral("-layout"), pdf, QStringLiteral("-")})
                                  .simplified();
        QVERIFY(words.contains(QStringLiteral("TE Workbench report")));
        QVERIFY(words.contains(report.headline.left(30)));
        for (const RunRecord& r : records) QVERIFY2(words.contains(QString::fromStdString(r.config.name)), r.config.name.c_str());
        QVERIFY(words.contains(QStringLiteral("Speedup [95% interval]")));
        QVERIFY_THROWS_EXCEPTION(ConfigError, write_report(dir.filePath(QStringLiteral("report.txt")).toStdString(), report));
    }

    // A llama trained on a token file: the machine-and-model section names the architecture and its sizes and the
    // file (name, size, SHA-256 prefix, format, tokens, held-out fraction), never its contents; an FP8 run and a BF16
    // run of the same configuration with validation losses get the sentence comparing them, honest that FP8 was
    // emulated on the CPU; a run of another configuration is not compared.
    void reportNamesTheModelTheDataAndFp8sValidationLoss() {
        RunConfig llama = make_preset(Preset::QuickCpu);
        llama.model.arch = Arch::Llama;
        llama.model.kv_heads = 2;
        llama.data.path = "/corpora/corpus.txt";
        llama.data.val_fraction = 0.05;
        const DataFileInfo corpus{"corpus.txt", 262144, "0123456789abcdef" + std::string(48, 'e'), TokenFormat::Bytes,
                                  262144, 13107, 122};
        const auto run = [&](const std::string& name, Precision precision, const std::vector<double>& val) {
            RunRecord r = test::synthetic_record_of(name, Backend::Te, precision, precision == Precision::Fp8, 100, 10, 20);
            r.config = llama;
            r.config.name = name;
            r.config.backend = Backend::Te;
            r.config.precision = precision;
            r.config.warmup = 10;
            r.config.iters = 90;
            r.execution.device = "cpu";
            r.data_file = corpus;
            for (std::size_t i = 0; i < val.size(); ++i) r.steps[20 * (i + 1) - 1].val_loss = val[i];
            return r;
        };
        RunCollection runs;
        runs.add(run("te bf16 cpu", Precision::Bf16, {4.1, 3.6, 3.3, 3.1, 3.0}));
        runs.add(run("te fp8 cpu", Precision::Fp8, {4.1, 3.61, 3.31, 3.104, 3.0042}));
        RunRecord other = run("te fp8 other seed", Precision::Fp8, {4.2, 3.7, 3.4, 3.2, 3.1});
        other.config.seed = 99;
        runs.add(other);
        const std::vector<RunRecord> records = runs.records();
        const ReportContent report = build_report(runs, records, 0, PlotOptions{});
        const QString& html = report.html;
        QVERIFY(html.contains(QStringLiteral("<h2>Machine and model</h2>")));
        QVERIFY2(html.contains(QStringLiteral("llama: 2 layers, hidden 128, 4 heads, 2 KV heads (grouped-query attention), "
                                              "SwiGLU FFN 384 (auto: 8/3 × hidden rounded up to 64), RoPE base 10000, RMSNorm, "
                                              "no biases; sequence 32, vocabulary 256, batch 8")),
                 qPrintable(html));
        QVERIFY2(html.contains(QStringLiteral("token file corpus.txt, ")) && html.contains(QStringLiteral("SHA-256 0123456789ab…, bytes, "
                                                                                                        "262144 tokens, 5.0 % held out "
                                                                                                        "for the validation loss (13107 tokens)")),
                 qPrintable(html));
        QVERIFY(!html.contains(QStringLiteral("0123456789abcdefe")));  // a prefix of the hash, not all of it
        const QString expected =
            QStringLiteral("FP8's validation loss is within 0.01 of BF16's (3.0042 vs 3.0000 at step 100; ").toHtmlEscaped();
        QVERIFY2(html.contains(expected), qPrintable(html));
        QVERIFY(html.contains(QStringLiteral("FP8 was emulated on the CPU")));
        QCOMPARE(html.count(QStringLiteral("validation loss is ")), 1);  // the other seed has no BF16 partner
        QVERIFY(html.contains(QStringLiteral("Val loss")));
        QVERIFY(html.contains(QStringLiteral("dotted with dots: the validation loss")));

        // A larger difference is said as one, with its size.
        runs.clear();
        runs.add(run("te bf16 cpu", Precision::Bf16, {4.1, 3.6, 3.3, 3.1, 3.0}));
        runs.add(run("te fp8 cpu", Precision::Fp8, {4.1, 3.7, 3.4, 3.2, 3.05}));
        const std::vector<std::string> sentences = validation_sentences(runs.records());
        QCOMPARE(sentences.size(), std::size_t{1});
        QVERIFY2(sentences.front().starts_with("FP8's validation loss is higher by 0.050 than BF16's (3.0500 vs 3.0000 at step 100"),
                 sentences.front().c_str());
        // Synthetic gpt runs: the default model and "synthetic tokens", no sentence.
        RunCollection synthetic;
        add_compare_runs(synthetic);
        const QString plain = build_report(synthetic, synthetic.records(), 0, PlotOptions{}).html;
        QVERIFY(plain.contains(QStringLiteral("gpt: 12 layers, hidden 768, 12 heads, GELU MLP 3072, LayerNorm, learned positions")));
        QVERIFY(plain.contains(QStringLiteral("synthetic tokens")));
        QVERIFY(!plain.contains(QStringLiteral("validation loss is")));
        QVERIFY(!plain.contains(QStringLiteral("Val loss")));
    }

    // The report names its noisy runs and why, qualifies a headline that stands on one, and labels the run.
    void reportSaysWhichRunsWereNoisy() {
        RunCollection runs;
        add_compare_runs(runs);
        std::vector<RunRecord> records = runs.records();
        for (RunRecord& r : records) {
            MeasurementQuality q;
            q.cv = r.config.name == "torch fp32 cpu (baseline)" ? 0.2 : 0.01;
            q.cores = 2;
            judge_quality(q);
            r.execution.quality = q;
        }
        const ReportContent report = build_report(runs, records, 0, PlotOptions{});
        QVERIFY2(report.headline.contains(QStringLiteral("(noisy measurement: not clean evidence of a difference)")),
                 qPrintable(report.headline));
        QVERIFY2(report.html.contains(QStringLiteral("Noisy measurements: torch fp32 cpu (baseline) (step times vary by 20.0 %")),
                 qPrintable(report.html));
        QVERIFY(report.html.contains(QStringLiteral("noisy: step times vary by 20.0 % (CV; noisy above 10.0 %)")));
        // The charts' legend marks the noisy run too.
        RunCollection shown;
        for (const RunRecord& r : records) shown.add(r);
        MetricPlot plot(step_ms_metric());
        plot.refresh(shown);
        QCOMPARE(plot.traces().front().name, QStringLiteral("torch fp32 cpu (baseline) (noisy)"));
        QCOMPARE(plot.traces().back().name, QStringLiteral("te fp8 cpu"));
        for (RunRecord& r : records) {
            r.execution.quality->cv = 0.01;
            judge_quality(*r.execution.quality);
        }
        const ReportContent clean = build_report(runs, records, 0, PlotOptions{});
        QVERIFY(!clean.headline.contains(QStringLiteral("noisy")));
        QVERIFY(clean.html.contains(QStringLiteral("Every run was measured with steady step times")));
    }

    // The PDF's pages: each figure's heading, images and caption on one page; no page but the last left
    // mostly empty; charts printed at the size they were drawn, so their text reads at ~9 pt.
    void reportKeepsFiguresWithTheirCaptions() {
        RunCollection runs;
        add_compare_runs(runs);
        RunRecord inspected = test::synthetic_record("te fp8 inspected", 30, 5, 20);
        for (int layer = 0; layer < 8; ++layer) {
            for (const SlotRole role : {SlotRole::Input, SlotRole::Weight, SlotRole::GradOutput}) {
                inspected.fp8_slots.push_back({"blocks_" + std::to_string(layer) + ".mlp.fc1", role, Fp8Dtype::E4M3});
            }
        }
        for (StepMetrics& s : inspected.steps) {
            s.fp8.assign(inspected.fp8_slots.size(), Fp8SlotSample{1.0f, 2.0f, 0.0f, 0.0f, 1e-3f / s.step, 1e-3f, 1e-4f});
        }
        runs.add(inspected);
        const std::vector<RunRecord> records = runs.records();
        const ReportContent report = build_report(runs, records, 0, PlotOptions{});
        for (const auto& [name, image] : report.images) {
            if (!name.startsWith(QStringLiteral("chart-"))) continue;
            const QString shown = QStringLiteral("src=\"%1\" width=\"%2\"").arg(name).arg(image.width() / 3);
            QVERIFY2(report.html.contains(shown), qPrintable(name));  // printed at its drawing size, not shrunk
        }
        QTemporaryDir dir;
        const QString pdf = dir.filePath(QStringLiteral("report.pdf"));
        write_report(pdf.toStdString(), report);
        const QRegularExpressionMatch pages =
            QRegularExpression(QStringLiteral("Pages:\\s+(\\d+)")).match(run_tool(QStringLiteral("pdfinfo"), {pdf}));
        QVERIFY(pages.hasMatch());
        const int count = pages.captured(1).toInt();
        QVERIFY2(count >= 2 && count <= 6, qPrintable(pages.captured(1)));
        QStringList text;
        std::vector<int> images;
        for (int page = 1; page <= count; ++page) {
            const QStringList range{QStringLiteral("-f"), QString::number(page), QStringLiteral("-l"), QString::number(page)};
            text << run_tool(QStringLiteral("pdftotext"), range + QStringList{pdf, QStringLiteral("-")}).simplified();
            // pdfimages -list: two header lines, then a line per image on the page.
            images.push_back(static_cast<int>(run_tool(QStringLiteral("pdfimages"), range + QStringList{QStringLiteral("-list"), pdf})
                                                  .split(QLatin1Char('\n'), Qt::SkipEmptyParts)
                                                  .size()) - 2);
            if (page == count) break;
            // Every page but the last is filled to at least half its height.
            const QString prefix = dir.filePath(QStringLiteral("page"));
            run_tool(QStringLiteral("pdftoppm"), range + QStringList{QStringLiteral("-r"), QStringLiteral("20"), QStringLiteral("-gray"),
                                                                     QStringLiteral("-singlefile"), pdf, prefix});
            const QImage raster(prefix + QStringLiteral(".pgm"));
            QVERIFY(!raster.isNull());
            int lowest = 0;
            for (int y = 0; y < raster.height(); ++y) {
                for (int x = 0; x < raster.width(); ++x) {
                    if (qGray(raster.pixel(x, y)) < 200) lowest = y;
                }
            }
            QVERIFY2(lowest > raster.height() / 2, qPrintable(QStringLiteral("page %1 ends at %2 of %3").arg(page).arg(lowest).arg(raster.height())));
        }
        const int expectedImages[] = {3, 1};  // the three charts, the heat map
        for (int figure = 1; figure <= 2; ++figure) {
            const QString heading = QStringLiteral("Figure %1 ·").arg(figure);
            const QString caption = QStringLiteral("Figure %1:").arg(figure);
            int page = 0;
            while (page < text.size() && !text[page].contains(caption)) ++page;
            QVERIFY2(page < text.size(), qPrintable(caption));
            QVERIFY2(text[page].contains(heading), qPrintable(QStringLiteral("%1 is on page %2 without its heading").arg(caption).arg(page + 1)));
            QVERIFY2(images[static_cast<std::size_t>(page)] >= expectedImages[figure - 1],
                     qPrintable(QStringLiteral("page %1 of %2 has %3 images").arg(page + 1).arg(caption).arg(images[static_cast<std::size_t>(page)])));
        }
        QVERIFY2(text.join(QLatin1Char(' ')).contains(QStringLiteral("process RSS, MiB")), "the memory chart says what it measures");
    }

    void repeatsDrawAMedianWithABandAndGiveIntervals() {
        auto window = make_window(&fake_train);
        RunSetupPanel* setup = window->setupPanel();
        setup->applyPreset(Preset::QuickCpu);
        qobject_cast<QSpinBox*>(setup->field("iters"))->setValue(6);
        setup->setRepeats(3);
        QSignalSpy drained(window->controller(), &RunController::queueDrained);
        setup->compareButton()->click();
        window->controller()->start();
        QVERIFY(drained.wait(60'000));
        // Three repeats of each row, alternating: the first three runs are three different rows.
        const auto& entries = window->runs()->entries();
        QVERIFY(entries.size() >= 9);
        QVERIFY(entries[0].record.repeat && entries[1].record.repeat);
        QVERIFY(entries[0].record.repeat->group != entries[1].record.repeat->group);
        QCOMPARE(entries[0].record.repeat->count, 3);
        window->charts()->markDirty();
        window->charts()->refreshIfDirty();
        const MetricPlot* plot = window->charts()->views()[1]->plot();
        const int groups = static_cast<int>(entries.size()) / 3;
        QCOMPARE(static_cast<int>(plot->traces().size()), groups);
        for (const MetricPlot::Trace& t : plot->traces()) {
            QVERIFY(t.band);
            QCOMPARE(t.repeats, 3);
            QVERIFY(t.name.contains(QStringLiteral("median of 3")));
        }
        ComparisonModel* model = window->comparison()->model();
        bool significant = false;
        for (int row = 0; row < model->rowCount(); ++row) {
            const QString interval = model->data(model->index(row, ComparisonModel::SpeedupInterval)).toString();
            const QString spread = model->data(model->index(row, ComparisonModel::Spread)).toString();
            QVERIFY2(spread.contains(QStringLiteral("3 repeats")), qPrintable(spread));
            if (interval.contains(QStringLiteral("×")) && !interval.contains(QStringLiteral("not significant"))) significant = true;
        }
        QVERIFY(significant);  // te at 5 ms against torch at 10 ms
    }

    void sweepRunsTinySizesOnTheCpu() {
        auto window = make_window();
        RunSetupPanel* setup = window->setupPanel();
        setup->applyPreset(Preset::QuickCpu);
        QVERIFY(test::run_tiny_sweep(*window, QStringLiteral("64,128"), 120'000));
        SweepPanel* sweep = window->sweep();
        QCOMPARE(sweep->result()->points.size(), std::size_t{2});
        QCOMPARE(sweep->table()->rowCount(), 2);
        QVERIFY(sweep->result()->cell(0, 0).speedup);
        const QString words = sweep->statement()->text();
        QVERIFY2(words.contains(QStringLiteral("BF16")) && words.contains(QStringLiteral("FP8 (emulated)")), qPrintable(words));
        // The emulated precision's ratio is the emulation's cost: no break-even, never "pays".
        QVERIFY2(words.contains(QStringLiteral("not FP8's speed; no break-even is stated")), qPrintable(words));
        QTemporaryDir dir;
        QString error;
        QVERIFY2(sweep->exportPng(dir.filePath(QStringLiteral("sweep.png")), &error), qPrintable(error));
        QVERIFY2(sweep->exportCsv(dir.filePath(QStringLiteral("sweep.csv")), &error), qPrintable(error));
        QImage png(dir.filePath(QStringLiteral("sweep.png")));
        QCOMPARE(png.size(), QSize(2400, 1400));
        QVERIFY(test::distinct_colours(png) > 8);
        // A bad grid is refused with the field's name, nothing queued.
        sweep->hiddenField()->setText(QStringLiteral("100"));
        QSignalSpy errors(window.get(), &MainWindow::errorShown);
        sweep->runButton()->click();
        QCOMPARE(errors.size(), 1);
        QVERIFY(errors.front().front().toString().contains(QStringLiteral("multiples of 64")));
    }

    void emulatedFp8SaysSoInTheLegendTableAndQueue() {
        RunCollection runs;
        add_compare_runs(runs);
        RunRecord emulated = runs.entries().back().record;
        emulated.execution.fp8_emulated = true;
        runs.remove(runs.entries().back().key);
        runs.add(emulated);
        MetricPlot plot(loss_metric());
        plot.refresh(runs);
        QCOMPARE(plot.traces().back().name, QStringLiteral("te fp8 cpu (emulated FP8)"));
        DashboardContents contents;
        render_dashboard(runs, runs.records(), 0, PlotOptions{}, kDashboardExportSize, 1.0, &contents);
        QVERIFY(contents.legend_labels.contains(QStringLiteral("te fp8 cpu (emulated FP8)")));
        ComparisonModel model(&runs);
        QCOMPARE(model.data(model.index(model.rowCount() - 1, ComparisonModel::Name)).toString(),
                 QStringLiteral("te fp8 cpu (emulated FP8)"));
        // Queued before it runs: FP8 on the CPU is emulated (core's RunFacts), and the queue says so.
        RunCollection queued_runs;
        RunController controller(&queued_runs);
        DeviceInfo cpu;
        cpu.gpu_error = "no CUDA-capable device is detected";
        controller.setDevice(cpu);
        RunConfig config = make_preset(Preset::QuickCpu);
        config.device = DeviceKind::Cpu;
        config.backend = Backend::Te;
        config.precision = Precision::Fp8;
        config.name = "te fp8 cpu";
        QVERIFY(!controller.enqueue(config));
        const RunQueueModel& queue = *controller.queue();
        QCOMPARE(queue.data(queue.index(0, RunQueueModel::Name)).toString(), QStringLiteral("te fp8 cpu (emulated FP8)"));
    }

    void fp8InspectorHeatMapAndWhatIf() {
        // An inspected FP8 record: 2 slots, 6 steps; slot 0 would do better under block scaling.
        RunRecord r = test::synthetic_record("te fp8 inspected", 6, 1, 10);
        r.fp8_slots = {{"blocks_0.fc1", SlotRole::Input, Fp8Dtype::E4M3}, {"blocks_0.fc1", SlotRole::GradOutput, Fp8Dtype::E5M2}};
        for (StepMetrics& s : r.steps) {
            const float k = static_cast<float>(s.step);
            s.fp8 = {Fp8SlotSample{2.0f * k, 100.0f, 0.001f, 0.0f, 1e-3f / k, 1e-3f, 1e-5f},
                     Fp8SlotSample{0.01f, 4e6f, 0.0f, 0.002f, 1e-2f, 1e-2f, 1e-2f}};
        }
        RunCollection runs;
        runs.add(test::synthetic_record("torch bf16", 6, 1, 12));
        runs.add(r);
        Fp8Inspector inspector(&runs);
        QCOMPARE(inspector.runPicker()->count(), 1);  // only FP8 runs
        QCOMPARE(inspector.runPicker()->currentText(), QStringLiteral("te fp8 inspected"));
        const Fp8HeatMap* map = inspector.heatMap();
        QCOMPARE(map->rows(), 2);
        QCOMPARE(map->columns(), 6);
        // Colour = SNR dB (the default): −10·log10(1e-3 / step) at slot 0, step 4 (column 3).
        QVERIFY(std::abs(*map->value(0, 3) - (-10.0 * std::log10(1e-3 / 4.0))) < 1e-3);
        inspector.metricPicker()->setCurrentIndex(inspector.metricPicker()->findData(static_cast<int>(Fp8Metric::Amax)));
        QCOMPARE(*map->value(0, 2), 6.0);
        const QImage image = map->render(QSize(800, 300));
        QVERIFY(test::distinct_colours(image) > 4);
        // The what-if table: block scaling erred least on slot 0, nothing better for slot 1.
        QTableWidget* table = inspector.whatIfTable();
        QCOMPARE(table->rowCount(), 2);
        QCOMPARE(table->item(0, 4)->text(), QStringLiteral("50.0"));  // −10·log10(1e-5)
        QCOMPARE(table->columnCount(), 9);  // slot, dtype, SNR, 4 what-ifs, worst saturated, least error
        QCOMPARE(table->horizontalHeaderItem(5)->text(), QStringLiteral("what-if MXFP8 dB"));
        QCOMPARE(table->item(0, 5)->text(), QStringLiteral("–"));  // a record without the microscaling what-ifs
        QCOMPARE(table->item(0, 8)->text(), QStringLiteral("block scaling"));
        QCOMPARE(table->item(1, 8)->text(), QStringLiteral("this recipe"));
        QVERIFY(inspector.blockScales()->isHidden());  // delayed scaling: no block scales
        // Clicking a row picks that slot.
        QSignalSpy picked(&inspector, &Fp8Inspector::slotPicked);
        Q_EMIT table->cellClicked(1, 0);
        QCOMPARE(picked.size(), 1);
        QCOMPARE(picked.front().front().value<Fp8SlotKey>().role, SlotRole::GradOutput);

        // A block-scaled run with its histograms: the picked slot's is shown, and MXFP8 wins slot 0 where it erred least.
        RunRecord block = r;
        block.id = "block-run";
        block.config.name = "te fp8 block";
        block.config.fp8.scaling = ScalingKind::Block;
        for (StepMetrics& s : block.steps) s.fp8[0].what_if(WhatIf::Mxfp8) = 1e-6f;
        block.fp8_block_scales = {Fp8ScaleHistogram{-9, {5, 20, 3}, 2}, Fp8ScaleHistogram{-20, {7}, 0}};
        runs.add(block);
        inspector.runPicker()->setCurrentIndex(1);
        QCOMPARE(inspector.runPicker()->currentText(), QStringLiteral("te fp8 block"));
        QVERIFY(!inspector.blockScales()->isHidden());
        QCOMPARE(table->item(0, 5)->text(), QStringLiteral("60.0"));
        QCOMPARE(table->item(0, 8)->text(), QStringLiteral("MXFP8"));
        QCOMPARE(inspector.blockScales()->histogram(), block.fp8_block_scales[1]);  // the slot picked before stays picked
        Q_EMIT inspector.heatMap()->slotClicked(0);
        QCOMPARE(inspector.blockScales()->histogram(), block.fp8_block_scales[0]);
        QCOMPARE(inspector.blockScales()->title(), QStringLiteral("blocks_0.fc1 · input"));
        BlockScaleHistogram* bars = inspector.blockScales();
        bars->resize(600, 200);
        QCOMPARE(bars->binadeAt(QPoint(64 + 3, 100)), std::optional<int>(-9));  // the first bar
        QCOMPARE(bars->binadeAt(QPoint(600 - 14, 100)), std::optional<int>(-7));  // the last
        QCOMPARE(bars->binadeAt(QPoint(10, 100)), std::nullopt);  // the axis labels
        QVERIFY(test::distinct_colours(bars->render(QSize(600, 200))) >= 2);
    }

    // The run-setup form fits its pane at 1280×800: no field is cut at the right edge (the pane has no
    // horizontal scroll bar, so a form wider than the pane would be clipped).
    void setupFormFitsItsPaneAt1280() {
        auto window = make_window(&fake_train);
        window->resize(1280, 800);
        QTest::qWait(50);
        QScrollArea* scroll = window->setupPanel()->formScroll();
        QVERIFY(scroll);
        QVERIFY2(window->setupPanel()->form()->minimumSizeHint().width() <= scroll->viewport()->width(),
                 qPrintable(QStringLiteral("form needs %1 px, the pane has %2")
                                .arg(window->setupPanel()->form()->minimumSizeHint().width())
                                .arg(scroll->viewport()->width())));
    }

    void settingsRoundTrip() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("te-workbench.ini"));
        {
            auto window = make_window(&fake_train);
            window->setupPanel()->applyPreset(Preset::QuickCpu);
            qobject_cast<QSpinBox*>(window->setupPanel()->field("hidden"))->setValue(192);
            qobject_cast<QSpinBox*>(window->setupPanel()->field("heads"))->setValue(3);
            window->setupPanel()->setRepeats(4);
            window->setDark(true);
            window->resize(1280, 800);
            window->rememberIn(std::make_unique<QSettings>(path, QSettings::IniFormat));  // restores nothing: empty
            window->setDark(true);
            window->close();  // writes
        }
        QVERIFY(QFile::exists(path));
        auto again = make_window(&fake_train);
        QVERIFY(!again->isDark());
        QSettings settings(path, QSettings::IniFormat);
        again->restoreSettings(settings);
        QVERIFY(again->isDark());
        QCOMPARE(again->setupPanel()->config().model.hidden, 192);
        QCOMPARE(again->setupPanel()->config().model.heads, 3);
        QCOMPARE(again->setupPanel()->repeats(), 4);
        QCOMPARE(again->size(), QSize(1280, 800));
        // A setup that no longer reads keeps the defaults and says so, never crashes.
        settings.setValue(QStringLiteral("setup/config"), QStringLiteral("{not json"));
        auto third = make_window(&fake_train);
        third->restoreSettings(settings);
        QVERIFY(third->setupPanel()->config().model.hidden != 192);
        again->setDark(false);
    }
};

QTEST_MAIN(TestStakeholder)
#include "tst_stakeholder.moc"

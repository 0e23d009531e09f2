#include <QtTest>

#include <cmath>

#include <QCheckBox>
#include <QComboBox>
#include <QGuiApplication>
#include <QScreen>
#include <QDialogButtonBox>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QHeaderView>
#include <QAbstractTextDocumentLayout>
#include <QLabel>
#include <QTextBlock>
#include <QTextDocument>
#include <QTextLayout>
#include <QScrollArea>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QLegend>
#include <QLineSeries>
#include <QScatterSeries>
#include <QSpinBox>
#include <QTableView>
#include <QLogValueAxis>
#include <QValueAxis>

#include "UiTestSupport.h"
#include "core/common/Error.h"
#include "core/config/SweepPlan.h"
#include "core/results/MeasurementQuality.h"
#include "core/results/LedgerReport.h"
#include "ui/charts/ChartsPanel.h"
#include "ui/charts/Fp8Inspector.h"
#include "ui/charts/Fp8Panel.h"
#include "ui/report/ReportLayout.h"
#include "ui/charts/LedgerSummary.h"
#include "ui/charts/TimeBreakdownChart.h"
#include "ui/charts/TopKernelsPanel.h"
#include "ui/charts/MetricChartView.h"
#include "ui/charts/MetricPlot.h"
#include "ui/charts/RunLegend.h"
#include "ui/charts/YRangeDialog.h"
#include "ui/charts/SeriesMath.h"
#include "ui/common/Theme.h"
#include "ui/export/Export.h"
#include "ui/report/Report.h"
#include "ui/runs/RunCollection.h"
#include "ui/sweep/SweepPanel.h"

using namespace tewb;
using namespace tewb::ui;

class TestCharts : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Beside the time breakdown: each run's ledger totals, its first layer's rows in the tooltip, and a run
    // without a ledger says so.
    void ledgerSummaryShowsTotalsAndTheLayersRows() {
        RunRecord measured;
        measured.config.name = "te bf16 cpu";
        measured.execution.ledger = make_ledger({{0, "qkv", "tewb::layer_norm_forward", LaunchWork::Kernel, 1, 1, true, 1024, 512},
                                                 {0, "qkv", "aten::mm", LaunchWork::Kernel, 2, 2, false, 4096, 2048},
                                                 {-1, "optimizer", "aten::_fused_adamw_", LaunchWork::Kernel, 1, 3, false, 100, 50}},
                                                1, {2048}, 3, "eager step 3 (the last warm-up step)");
        RunRecord older;
        older.config.name = "torch bf16 cpu";
        ui::LedgerSummary summary;
        summary.setRecords({measured, older});
        const QString text = summary.text();
        QVERIFY2(text.contains(QStringLiteral("te bf16 cpu: 6 launches per step, 3.0 per layer")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("(5 launches not known")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("torch bf16 cpu: no ledger")), qPrintable(text));
        const QString tip = summary.toolTip();
        QVERIFY2(tip.contains(QStringLiteral("tewb::layer_norm_forward")) && tip.contains(QStringLiteral("aten::mm")) &&
                     tip.contains(QStringLiteral("eager step 3")) && !tip.contains(QStringLiteral("_fused_adamw_")),
                 qPrintable(tip));
        summary.setRecords({older});
        QCOMPARE(summary.toolTip(), QStringLiteral("No run has a launch ledger yet"));
    }

    // Beside the time breakdown: a traced run's top kernels, one run at a time, every column sorting by value, and
    // its whole table exported as CSV; without a traced run it says how to get one.
    void topKernelsPanelShowsSortsAndExportsATracedRun() {
        RunRecord traced;
        traced.id = "traced";
        traced.config.name = "te fp8 cpu";
        KernelProfile p;
        p.step = 4;
        p.source = "CPU operators, outermost";
        p.step_ms = 2.0;
        p.trace_path = "/tmp/trace.json";
        p.kernels = {{"aten::mm", 10, 900.0}, {"tewb::cast_transpose_to_fp8", 40, 600.0}, {"aten::add", 200, 100.0}};
        traced.execution.kernel_profile = p;
        RunRecord plain;
        plain.id = "plain";
        plain.config.name = "torch bf16 cpu";
        ui::TopKernelsPanel panel;
        QVERIFY(!panel.runChooser()->isEnabled());
        QVERIFY2(panel.caption()->text().contains(QStringLiteral("te-bench run --profile")), qPrintable(panel.caption()->text()));
        panel.setRecords({plain, traced});
        QCOMPARE(panel.runChooser()->count(), 1);  // only runs with a trace
        QCOMPARE(panel.runChooser()->currentText(), QStringLiteral("te fp8 cpu"));
        QAbstractItemModel* model = panel.view()->model();
        QCOMPARE(model->rowCount(), 3);
        QCOMPARE(model->index(0, 0).data().toString(), QStringLiteral("aten::mm"));  // total, largest first
        QCOMPARE(model->index(0, 3).data().toString(), QStringLiteral("90.0"));       // mean µs
        QCOMPARE(model->index(0, 4).data().toString(), QStringLiteral("45.0%"));      // of the 2 ms step
        panel.view()->sortByColumn(1, Qt::DescendingOrder);                         // launches, by value not text
        QCOMPARE(model->index(0, 0).data().toString(), QStringLiteral("aten::add"));
        QCOMPARE(model->index(2, 0).data().toString(), QStringLiteral("aten::mm"));
        const QString caption = panel.caption()->text();
        QVERIFY2(caption.contains(QStringLiteral("Step 4")) && caption.contains(QStringLiteral("80.0%")) &&
                     caption.contains(QStringLiteral("/tmp/trace.json")),
                 qPrintable(caption));

        QTemporaryDir dir;
        QString error;
        QVERIFY2(panel.exportCsv(dir.filePath(QStringLiteral("kernels.csv")), &error), qPrintable(error));
        QFile csv(dir.filePath(QStringLiteral("kernels.csv")));
        QVERIFY(csv.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(csv.readAll());
        QVERIFY2(text.startsWith(QStringLiteral("kernel,launches,total_us,mean_us,share_of_step\naten::mm,10,900,90,0.45\n")),
                 qPrintable(text));
        QVERIFY(!panel.exportCsv(dir.filePath(QStringLiteral("missing/kernels.csv")), &error));
        QVERIFY2(error.contains(QStringLiteral("missing")), qPrintable(error));
        panel.setRecords({plain});
        QVERIFY(!panel.exportCsv(dir.filePath(QStringLiteral("none.csv")), &error));
        QCOMPARE(panel.view()->model()->rowCount(), 0);
    }

    // An export's extension either names a format the writer writes, in any case (report.PDF is a PDF), or is
    // refused before anything is written: never accepted by one check and refused by the writer.
    void exportExtensionsAreReadInAnyCase() {
        QTemporaryDir dir;
        const ReportContent report{QStringLiteral("headline"), QStringLiteral("<html><body><p>report</p></body></html>"), {}};
        QImage image(4, 3, QImage::Format_ARGB32);
        image.fill(Qt::red);
        // The writer's error, or nothing when it wrote the file.
        const auto written = [&](const char* name, bool png) -> QString {
            try {
                const std::filesystem::path path = dir.filePath(QString::fromLatin1(name)).toStdString();
                png ? write_png(path, image) : write_report(path, report);
                return {};
            } catch (const std::exception& e) {
                return QString::fromUtf8(e.what());
            }
        };
        const auto starts = [&](const char* name, const QByteArray& magic) {
            QFile file(dir.filePath(QString::fromLatin1(name)));
            return file.open(QIODevice::ReadOnly) && file.read(magic.size()) == magic;
        };
        for (const char* name : {"r1.PDF", "r2.Pdf", "r3.pdf"}) {
            const QString error = written(name, false);
            QVERIFY2(error.isEmpty(), qPrintable(error));
            QVERIFY2(starts(name, "%PDF-"), name);
        }
        for (const char* name : {"r4.HTML", "r5.Htm", "r6.html"}) {
            const QString error = written(name, false);
            QVERIFY2(error.isEmpty(), qPrintable(error));
            QVERIFY2(starts(name, "<html>"), name);
        }
        for (const char* name : {"r7.txt", "r8", "r9.pdf.bak"}) {
            const QString error = written(name, false);
            QVERIFY2(error.contains(QStringLiteral("allowed: .pdf, .html or .htm")), qPrintable(error));
            QVERIFY(!QFile::exists(dir.filePath(QString::fromLatin1(name))));
        }
        for (const char* name : {"i1.PNG", "i2.Png", "i3.png", "i4"}) {
            const QString error = written(name, true);
            QVERIFY2(error.isEmpty(), qPrintable(error));
            QVERIFY2(starts(name, QByteArray("\x89PNG\r\n\x1a\n", 8)), name);
        }
        for (const char* name : {"i5.jpg", "i6.JPEG", "i7.pdf"}) {  // PNG bytes under another format's name
            const QString error = written(name, true);
            QVERIFY2(error.contains(QStringLiteral("allowed: a .png file")), qPrintable(error));
            QVERIFY(!QFile::exists(dir.filePath(QString::fromLatin1(name))));
        }
    }

    void decimationKeepsSpikesAndOrder() {
        std::vector<QPointF> points;
        for (int i = 0; i < 10000; ++i) points.emplace_back(i, i == 5003 ? 1000.0 : std::sin(i * 0.01));
        const std::vector<QPointF> out = decimate_min_max(points, 0, 9999, 100);
        QVERIFY(out.size() <= 200);
        QVERIFY(out.size() >= 100);
        QVERIFY(std::any_of(out.begin(), out.end(), [](const QPointF& p) { return p.y() == 1000.0; }));
        QVERIFY(std::is_sorted(out.begin(), out.end(), [](const QPointF& a, const QPointF& b) { return a.x() < b.x(); }));
        double lowest = 0;
        for (const QPointF& p : points) lowest = std::min(lowest, p.y());
        QVERIFY(std::any_of(out.begin(), out.end(), [&](const QPointF& p) { return p.y() == lowest; }));

        // Few points come back unchanged; a zoomed range keeps one point beyond each edge.
        const std::vector<QPointF> few(points.begin(), points.begin() + 50);
        QCOMPARE(decimate_min_max(few, 0, 49, 100), few);
        const std::vector<QPointF> zoomed = decimate_min_max(points, 100, 200, 500);
        QCOMPARE(zoomed.front().x(), 99.0);
        QCOMPARE(zoomed.back().x(), 201.0);
        QCOMPARE(zoomed.size(), std::size_t{103});
    }

    void emaIsDebiased() {
        const std::vector<QPointF> constant{{1, 4}, {2, 4}, {3, 4}};
        const std::vector<QPointF> smoothed = smooth_debiased_ema(constant, 0.9);
        for (const QPointF& p : smoothed) QCOMPARE(p.y(), 4.0);  // no pull towards zero at the start
        const std::vector<QPointF> step{{1, 0}, {2, 10}};
        const std::vector<QPointF> s = smooth_debiased_ema(step, 0.5);
        QCOMPARE(s[0].y(), 0.0);
        // average = 0.5*(0.5*0) + 0.5*10 = 5, debiased by 1 - 0.25
        QVERIFY(std::abs(s[1].y() - 5.0 / 0.75) < 1e-12);
        QCOMPARE(smooth_debiased_ema(step, 0.0), step);
        const std::vector<QPointF> withNan{{1, 1}, {2, std::nan("")}, {3, 1}};
        const std::vector<QPointF> n = smooth_debiased_ema(withNan, 0.5);
        QVERIFY(std::isnan(n[1].y()));
        QCOMPARE(n[2].y(), 1.0);
    }

    void logAxisCopesWithValuesAtOrBelowZero() {
        std::vector<QPointF> points{{1, 0}, {2, -3}, {3, 0.02}, {4, 5}};
        const double floor = floor_for_log({points});
        QCOMPARE(floor, 0.001);
        QCOMPARE(clamp_for_log(points, floor), 2);
        QCOMPARE(points[0].y(), 0.001);
        QCOMPARE(floor_for_log({{{1, 0}}}), 1.0);
        const NiceRange r = nice_log_range(0.001, 5);
        QCOMPARE(r.lo, 0.001);
        QCOMPARE(r.hi, 10.0);
    }

    void niceRangesAreRound() {
        const NiceRange r = nice_range(18, 215, 6);
        QCOMPARE(r.lo, 0.0);
        QCOMPARE(r.hi, 250.0);
        QCOMPARE(r.ticks, 6);
        const NiceRange flat = nice_range(3, 3);
        QVERIFY(flat.lo < 3 && flat.hi > 3);
    }

    void plotOverlaysRunsInTheirColours() {
        RunCollection runs;
        runs.add(test::synthetic_record("a", 40, 10, 20));
        runs.add(test::synthetic_record("b", 30, 5, 10));
        MetricPlot plot(loss_metric());
        plot.resize(800, 500);
        plot.refresh(runs);
        plot.refresh(runs);
        QCOMPARE(plot.traces().size(), std::size_t{2});
        QCOMPARE(plot.traces()[0].colour, runs.entries()[0].colour);
        QVERIFY(runs.entries()[0].colour != runs.entries()[1].colour);
        QCOMPARE(plot.traces()[0].warmup_points, std::size_t{10});
        // Per run: raw (hidden without smoothing), warm-up (dashed) and timed (solid); the timed line
        // starts at the last warm-up point.
        QCOMPARE(plot.series().size(), 6);
        auto* warm = qobject_cast<QLineSeries*>(plot.series()[1]);
        auto* timed = qobject_cast<QLineSeries*>(plot.series()[2]);
        QCOMPARE(warm->count(), 10);
        QCOMPARE(timed->count(), 31);
        QCOMPARE(warm->pen().style(), Qt::DashLine);
        QCOMPARE(timed->pen().style(), Qt::SolidLine);
        QCOMPARE(timed->pen().color(), runs.entries()[0].colour);
        auto* x = qobject_cast<QValueAxis*>(plot.axes(Qt::Horizontal).front());
        auto* y = qobject_cast<QValueAxis*>(plot.axes(Qt::Vertical).front());
        QCOMPARE(x->min(), 0.0);
        QCOMPARE(x->max(), 40.0);
        QVERIFY(y->min() <= 5.0 / 40 && y->max() >= 5.0);
        QCOMPARE(y->tickCount(), nice_range(5.0 / 40, 5.0, 6).ticks);
        QVERIFY(!plot.isZoomed());

        // Smoothing shows the raw line faintly under the smoothed one.
        PlotOptions o;
        o.smoothing = 0.8;
        plot.setOptions(o);
        plot.refresh(runs);
        auto* raw = qobject_cast<QLineSeries*>(plot.series()[0]);
        QVERIFY(raw->isVisible());
        QVERIFY(raw->pen().color().alpha() < 255);
        QVERIFY(plot.traces()[0].shown[20].y() != plot.traces()[0].raw[20].y());

        // Time axis.
        o.x = XAxis::Time;
        plot.setOptions(o);
        plot.refresh(runs);
        QCOMPARE(plot.traces()[0].raw.back().x(), 40 * 20 / 1000.0);

        // A run leaving the collection takes its series along.
        runs.remove(runs.entries()[1].key);
        plot.refresh(runs);
        QCOMPARE(plot.series().size(), 3);
    }

    // The validation loss beside the training loss: in the run's colour, dotted with a marker per evaluation, named
    // "<run> (validation)", only for runs that have one and only on the loss chart; the crosshair lists it only at
    // steps that evaluated, and exported legends and the dashboard table name it.
    void validationLossIsDrawnBesideTheTrainingLoss() {
        RunCollection runs;
        RunRecord onFile = test::synthetic_record("on a file", 40, 10, 20);
        for (const int i : {9, 19, 29, 39}) onFile.steps[static_cast<std::size_t>(i)].val_loss = 6.0 / (i + 1);
        runs.add(onFile);
        runs.add(test::synthetic_record("synthetic", 40, 10, 10));
        MetricPlot plot(loss_metric());
        plot.resize(800, 500);
        plot.refresh(runs);
        plot.refresh(runs);
        QCOMPARE(plot.traces().size(), std::size_t{3});
        QVERIFY(!plot.traces()[0].companion && !plot.traces()[1].companion);
        const MetricPlot::Trace& val = plot.traces()[2];
        QVERIFY(val.companion);
        QCOMPARE(val.name, QStringLiteral("on a file (validation)"));
        QCOMPARE(val.colour, runs.entries()[0].colour);
        QCOMPARE(val.raw.size(), std::size_t{4});
        QCOMPARE(val.raw.back(), QPointF(40, 6.0 / 40));
        QLineSeries* line = nullptr;
        for (QAbstractSeries* series : plot.series()) {
            if (series->name() == val.name) line = qobject_cast<QLineSeries*>(series);
        }
        QVERIFY(line != nullptr);
        QCOMPARE(line->count(), 4);
        QCOMPARE(line->pen().style(), Qt::DotLine);
        QCOMPARE(line->pen().color(), runs.entries()[0].colour);
        QVERIFY(line->pointsVisible());

        MetricPlot stepTime(step_ms_metric());
        stepTime.refresh(runs);
        QCOMPARE(stepTime.traces().size(), std::size_t{2});

        MetricChartView view(loss_metric());
        view.resize(800, 500);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.plot()->refresh(runs);
        view.plot()->refresh(runs);
        const QString at20 = view.crosshairText(20);
        QVERIFY2(at20.contains(QStringLiteral("on a file (validation): 0.3")), qPrintable(at20));
        const QString at21 = view.crosshairText(21);
        QVERIFY2(!at21.contains(QStringLiteral("(validation)")), qPrintable(at21));

        DashboardContents contents;
        render_dashboard(runs, runs.records(), 0, PlotOptions{}, QSize(1200, 800), 1.0, &contents);
        QVERIFY2(contents.legend_labels.contains(QStringLiteral("on a file (validation)")),
                 qPrintable(contents.legend_labels.join(QStringLiteral(", "))));
        const QString table = comparison_table_html(runs, runs.records(), 0, QStringLiteral("#000000"));
        QVERIFY(table.contains(QStringLiteral("Val loss")) && table.contains(QStringLiteral("0.1500")));

        // The charts' legend line says what the dotted line is while a run has one.
        ChartsPanel panel(&runs, {loss_metric(), step_ms_metric(), memory_metric()}, 3);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        auto* legend = panel.findChild<RunLegend*>(QStringLiteral("legend"));
        QTRY_VERIFY2(legend->text().contains(QStringLiteral("dotted with dots: validation loss")), qPrintable(legend->text()));

        // Without a run on a token file: no companion, no column and no such note.
        runs.remove(runs.entries()[0].key);
        panel.refreshIfDirty();
        QTRY_VERIFY2(!legend->text().contains(QStringLiteral("validation")), qPrintable(legend->text()));
        plot.refresh(runs);
        QCOMPARE(plot.traces().size(), std::size_t{1});
        QVERIFY(!comparison_table_html(runs, runs.records(), 0, QStringLiteral("#000000")).contains(QStringLiteral("Val loss")));
    }

    // A cancelled or failed run's partial lines say so in the legend, the chart's traces (hover and exported
    // legends) and the dashboard export; a finished run's name is unchanged.
    void unfinishedRunsAreMarkedInTheLegend() {
        RunCollection runs;
        RunRecord cancelled = test::synthetic_record("stopped early", 8, 2, 10);
        cancelled.status = RunStatus::Cancelled;
        RunRecord failed = test::synthetic_record("broke", 8, 2, 10);
        failed.status = RunStatus::Failed;
        runs.add(test::synthetic_record("went well", 8, 2, 10));
        runs.add(cancelled);
        runs.add(failed);
        MetricPlot plot(loss_metric());
        plot.refresh(runs);
        QStringList names;
        for (const MetricPlot::Trace& t : plot.traces()) names << t.name;
        QVERIFY2(names.contains(QStringLiteral("went well")), qPrintable(names.join(QStringLiteral(", "))));
        QVERIFY2(names.contains(QStringLiteral("stopped early (cancelled)")), qPrintable(names.join(QStringLiteral(", "))));
        QVERIFY2(names.contains(QStringLiteral("broke (failed)")), qPrintable(names.join(QStringLiteral(", "))));
        ChartsPanel panel(&runs, {loss_metric(), step_ms_metric(), memory_metric()}, 3);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        auto* legend = panel.findChild<RunLegend*>(QStringLiteral("legend"));
        QTRY_VERIFY2(legend->text().contains(QStringLiteral("stopped early (cancelled)")), qPrintable(legend->text()));
        QVERIFY2(legend->text().contains(QStringLiteral("broke (failed)")), qPrintable(legend->text()));
        QVERIFY2(!legend->text().contains(QStringLiteral("went well (")), qPrintable(legend->text()));
        DashboardContents contents;
        render_dashboard(runs, runs.records(), 0, PlotOptions{}, QSize(1200, 800), 1.0, &contents);
        QVERIFY2(contents.legend_labels.contains(QStringLiteral("stopped early (cancelled)")),
                 qPrintable(contents.legend_labels.join(QStringLiteral(", "))));
    }

    void manyStepsAreDecimatedToThePlotWidth() {
        RunCollection runs;
        runs.add(test::synthetic_record("long", 20000, 10, 5));
        MetricPlot plot(step_ms_metric());
        plot.resize(600, 400);
        plot.refresh(runs);
        plot.refresh(runs);
        QVERIFY2(plot.pointsDrawn() <= 2 * 600 + 10, std::to_string(plot.pointsDrawn()).c_str());
        QVERIFY(plot.pointsDrawn() >= 100);
    }

    void logYMovesNonPositiveValuesToTheFloorAndSaysSo() {
        RunCollection runs;
        RunRecord r = test::synthetic_record("zeros", 20, 2, 5);
        r.steps[5].loss = 0;
        r.steps[6].loss = -1;
        runs.add(r);
        MetricPlot plot(loss_metric());
        PlotOptions o;
        o.log_y = true;
        plot.setOptions(o);
        plot.resize(600, 400);
        plot.refresh(runs);
        QCOMPARE(plot.valuesAtFloor(), 2);
        QVERIFY2(plot.title().contains(QStringLiteral("2 value")), qPrintable(plot.title()));
        QVERIFY(qobject_cast<QLogValueAxis*>(plot.axes(Qt::Vertical).front()) != nullptr);
        o.log_y = false;
        plot.setOptions(o);
        plot.refresh(runs);
        QVERIFY(qobject_cast<QValueAxis*>(plot.axes(Qt::Vertical).front()) != nullptr);
        QCOMPARE(plot.series().front()->attachedAxes().size(), 2);
    }

    void zoomStopsAutoRangeUntilReset() {
        RunCollection runs;
        runs.add(test::synthetic_record("a", 40, 10, 20));
        MetricChartView view(loss_metric());
        view.resize(800, 500);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.plot()->refresh(runs);
        view.plot()->zoomIn(QRectF(view.plot()->plotArea().center() + QPointF(3.7, 1.3), QSizeF(101, 97)));
        QVERIFY(view.plot()->isZoomed());
        auto* x = qobject_cast<QValueAxis*>(view.plot()->axes(Qt::Horizontal).front());
        auto* y = qobject_cast<QValueAxis*>(view.plot()->axes(Qt::Vertical).front());
        // Once the zoom is done its ticks are round numbers, not the rubber band's pixel values ("8.723…").
        const auto round_ticks = [](const QValueAxis* axis) {
            const double step = (axis->max() - axis->min()) / (axis->tickCount() - 1);
            const double magnitude = std::pow(10.0, std::floor(std::log10(step)));
            const double mantissa = step / magnitude;
            const bool nice_step = std::abs(mantissa - std::round(mantissa * 2) / 2) < 1e-9;  // 1, 1.5, 2, 2.5, 5 ...
            const bool on_grid = std::abs(axis->min() / step - std::round(axis->min() / step)) < 1e-6;
            return nice_step && on_grid;
        };
        QTRY_VERIFY2(round_ticks(x), qPrintable(QStringLiteral("x %1 … %2, %3 ticks").arg(x->min()).arg(x->max()).arg(x->tickCount())));
        QVERIFY2(round_ticks(y), qPrintable(QStringLiteral("y %1 … %2, %3 ticks").arg(y->min()).arg(y->max()).arg(y->tickCount())));
        QVERIFY(view.plot()->isZoomed());
        const double zoomedMax = x->max();
        QVERIFY(zoomedMax < 40);
        runs.add(test::synthetic_record("b", 80, 10, 20));
        view.plot()->refresh(runs);
        QCOMPARE(x->max(), zoomedMax);  // the user's zoom stays while data arrives
        view.plot()->resetZoom();
        QVERIFY(!view.plot()->isZoomed());
        QCOMPARE(x->max(), 80.0);
    }

    void crosshairListsEveryRunAtTheStep() {
        RunCollection runs;
        runs.add(test::synthetic_record("first run", 40, 10, 20));
        runs.add(test::synthetic_record("second run", 40, 10, 10));
        MetricChartView view(loss_metric());
        view.resize(800, 500);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.plot()->refresh(runs);
        view.plot()->refresh(runs);
        const QString text = view.crosshairText(20.2);
        QVERIFY2(text.contains(QStringLiteral("step 20")), qPrintable(text));
        QVERIFY(text.contains(QStringLiteral("first run: 0.25")));
        QVERIFY(text.contains(QStringLiteral("second run: 0.25")));
        QVERIFY(text.contains(runs.entries()[1].colour.name()));

        const QPointF inside = view.plot()->mapToPosition(QPointF(20, 1));
        QTest::mouseMove(view.viewport(), view.mapFromScene(view.plot()->mapToScene(inside)));
        QTRY_VERIFY(view.crosshairVisible());

        // A run that ended before the hovered step is left out (not listed at its last loss); the others are listed
        // highest value first.
        runs.add(test::synthetic_record("long run", 200, 10, 10));
        view.plot()->refresh(runs);
        const QString late = view.crosshairText(150);
        QVERIFY2(late.contains(QStringLiteral("long run")) && !late.contains(QStringLiteral("first run")) &&
                     !late.contains(QStringLiteral("second run")),
                 qPrintable(late));
        RunRecord high = test::synthetic_record("high loss", 40, 10, 10);
        for (StepMetrics& s : high.steps) s.loss += 5.0;
        runs.add(high);
        view.plot()->refresh(runs);
        const QString both = view.crosshairText(20);
        QVERIFY2(both.indexOf(QStringLiteral("high loss")) < both.indexOf(QStringLiteral("first run")), qPrintable(both));
    }

    void renderedImageHasTheRequestedSizeAndTheRunColours() {
        RunCollection runs;
        runs.add(test::synthetic_record("a", 40, 10, 20));
        runs.add(test::synthetic_record("b", 40, 10, 10));
        MetricPlot plot(loss_metric());
        const QImage image = plot.renderImage(runs, QSize(600, 400), 2.0);
        QCOMPARE(image.size(), QSize(1200, 800));
        QVERIFY(test::distinct_colours(image) > 8);
        for (const RunCollection::Entry& e : runs.entries()) {
            QVERIFY2(test::count_near(image, e.colour) > 50, qPrintable(e.colour.name()));
        }
        // The detached copy renders all of the chart: the bottom-right quarter is not empty.
        const QImage quarter = image.copy(600, 400, 600, 400);
        QVERIFY(test::distinct_colours(quarter) > 3);
    }

    // Peak memory says what it measures: the process's RSS on the CPU, the CUDA allocator's peak on a GPU,
    // both when both are shown; its axis starts at zero.
    void memoryAxisSaysWhatItMeasuresAndStartsAtZero() {
        RunCollection runs;
        RunRecord cpu = test::synthetic_record("cpu run", 20, 2, 5);
        cpu.execution.memory_metric = MemoryMetric::CpuPeakRss;
        runs.add(cpu);
        MetricPlot plot(memory_metric());
        plot.resize(600, 400);
        plot.refresh(runs);
        auto* y = qobject_cast<QValueAxis*>(plot.axes(Qt::Vertical).front());
        QCOMPARE(y->titleText(), QStringLiteral("process RSS, MiB"));
        QCOMPARE(y->min(), 0.0);  // the values are 101-120 MiB
        QVERIFY(y->max() >= 120.0);
        RunRecord gpu = test::synthetic_record("gpu run", 20, 2, 5);
        gpu.execution.memory_metric = MemoryMetric::CudaPeakAllocated;
        runs.add(gpu);
        plot.refresh(runs);
                const QString both = y->titleText() + plot.title();
        QVERIFY2(both.contains(QStringLiteral("RSS on CPU")) && both.contains(QStringLiteral("CUDA allocator on GPU")),
                 qPrintable(both));
        runs.remove(runs.entries().front().key);
        plot.refresh(runs);
        QCOMPARE(y->titleText(), QStringLiteral("CUDA allocator, MiB"));
        // Other metrics keep their axis to the data.
        MetricPlot steps(step_ms_metric());
        steps.resize(600, 400);
        steps.refresh(runs);
        QVERIFY(qobject_cast<QValueAxis*>(steps.axes(Qt::Vertical).front())->min() > 0);
    }

    // A small chart gets fewer ticks, so its axis numbers do not run into each other.
    void smallChartsHaveFewerTicks() {
        QCOMPARE(ticks_for_length(100, 40), 3);
        QCOMPARE(ticks_for_length(200, 40), 5);
        QCOMPARE(ticks_for_length(2000, 40), 6);
        const NiceRange fitted = fitted_range(1, 60, 3);
        QCOMPARE(fitted.lo, 0.0);
        QCOMPARE(fitted.hi, 60.0);  // not 0..100 in steps of 50
        QVERIFY(fitted.ticks <= 4);
        RunCollection runs;
        runs.add(test::synthetic_record("a", 400, 10, 5));
        MetricPlot plot(loss_metric());
        plot.resize(220, 180);
        plot.refresh(runs);
        const auto* x = qobject_cast<QValueAxis*>(plot.axes(Qt::Horizontal).front());
        QVERIFY2(x->tickCount() <= 5, std::to_string(x->tickCount()).c_str());
        QVERIFY(plot.plotArea().width() / (x->tickCount() - 1) >= 35);
        // The unit does not fit beside a plot this short: the title carries it instead of an elided axis title.
        QAbstractAxis* y = plot.axes(Qt::Vertical).front();
        QCOMPARE(y->titleText(), QString());
        QVERIFY2(plot.title().contains(QStringLiteral("(cross-entropy loss)")), qPrintable(plot.title()));
        plot.resize(1200, 700);  // a resize recomputes the ticks and the unit's place without new data
        QVERIFY(x->tickCount() > 3);
        QCOMPARE(y->titleText(), QStringLiteral("cross-entropy loss"));
        QCOMPARE(plot.title(), QStringLiteral("Loss"));
    }

    // Hover labels stay inside the chart: near the right edge they go left of the pointer, near the bottom
    // above it, and one larger than the area keeps its corner inside.
    void hoverLabelsStayInsideTheChart() {
        const QRectF area(10, 10, 400, 300);
        const QSizeF size(120, 80);
        QCOMPARE(place_inside(area, size, QPointF(100, 100)), QPointF(112, 112));
        const QPointF right = place_inside(area, size, QPointF(400, 100));
        QCOMPARE(right.x(), 400.0 - 12 - 120);
        const QPointF bottom = place_inside(area, size, QPointF(100, 300));
        QCOMPARE(bottom.y(), 300.0 - 12 - 80);
        const QPointF huge = place_inside(area, QSizeF(500, 400), QPointF(200, 200));
        QCOMPARE(huge, area.topLeft());

        RunCollection runs;
        runs.add(test::synthetic_record("a run with a rather long name", 40, 10, 20));
        runs.add(test::synthetic_record("another run with a long name", 40, 10, 10));
        MetricChartView view(loss_metric());
        view.resize(500, 320);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.plot()->refresh(runs);
        view.plot()->refresh(runs);
        for (const double step : {1.0, 20.0, 40.0}) {
            view.showCrosshairAt(step);
            const QRectF label = view.crosshairLabelRect();
            QVERIFY2(view.plot()->plotArea().contains(label),
                     qPrintable(QStringLiteral("step %1: label %2,%3 %4×%5").arg(step).arg(label.x()).arg(label.y()).arg(label.width()).arg(label.height())));
        }
    }

    // "Where the step time goes": a legend with each segment's words, a bar per run labelled with its name,
    // and each segment's ms on hover.
    void breakdownHasLegendLabelsAndSegmentTooltips() {
        RunRecord a = test::synthetic_record("torch fp32 cpu (baseline)", 10, 2, 10);
        a.summary.breakdown = StepBreakdown{4.0, 5.0, 1.0, 0.0, 0.0};
        a.summary.breakdown_source = "timed steps";
        RunRecord b = test::synthetic_record("te fp8 cpu", 10, 2, 10);
        b.summary.breakdown = StepBreakdown{3.0, 4.0, 1.0, 2.0, 0.0};
        b.summary.breakdown_source = "timed steps";
        RunRecord old = test::synthetic_record("older record", 10, 2, 10);
        TimeBreakdownChart chart;
        chart.show({a, b, old});
        QCOMPARE(chart.labels(), (QStringList{QStringLiteral("torch fp32 cpu (baseline)"), QStringLiteral("te fp8 cpu"),
                                              QStringLiteral("older record (no breakdown)")}));
        // No run communicates: that segment leaves the legend.
        QCOMPARE(chart.legendLabels(), (QStringList{QStringLiteral("forward"), QStringLiteral("backward"), QStringLiteral("optimizer"),
                                                    QStringLiteral("FP8 bookkeeping")}));
        const QString tip = chart.segmentToolTip(1, StepSegment::Fp8);
        QVERIFY2(tip.contains(QStringLiteral("te fp8 cpu")) && tip.contains(QStringLiteral("FP8 bookkeeping")) &&
                     tip.contains(QStringLiteral("2.00 ms")) && tip.contains(QStringLiteral("20%")),
                 qPrintable(tip));
        QVERIFY(chart.segmentToolTip(2, StepSegment::Forward).contains(QStringLiteral("no breakdown")));
        // Wide enough for the names beside their bars, tall enough for a bar per run.
        QVERIFY(chart.minimumWidth() >= QFontMetrics(chart.font()).horizontalAdvance(chart.labels().front()) + 150);
        QVERIFY(chart.minimumHeight() >= 3 * 26);
        QVERIFY(chart.minimumWidth() <= 900 && chart.minimumHeight() <= 500);
        // An FP8-inspected run says that its forward and backward include the inspection.
        b.config.inspect_fp8 = true;
        chart.show({a, b, old});
        QCOMPARE(chart.labels()[1], QStringLiteral("te fp8 cpu (FP8 inspected)"));
        QVERIFY(chart.segmentToolTip(1, StepSegment::Backward).contains(QStringLiteral("includes FP8 inspection")));
        QVERIFY(!chart.segmentToolTip(0, StepSegment::Backward).contains(QStringLiteral("inspection")));
    }

    // A run that did not inspect its casts has no SNR: its map says so instead of a grey grid with a made-up
    // 0 … 1 scale, while amax still draws; the FP8 charts' legend names only runs with FP8 statistics (and solos among
    // them); the what-if table keeps its header and a few rows under the map.
    void uninspectedRunsAndRunsWithoutFp8AreSaidPlainly() {
        RunRecord r = test::synthetic_record("te fp8 plain", 6, 1, 10);
        r.fp8_slots.push_back({"blocks_0.qkv", SlotRole::Input, Fp8Dtype::E4M3});
        for (StepMetrics& s : r.steps) s.fp8.assign(1, Fp8SlotSample{1.0f, 2.0f});  // amax and scale only
        Fp8HeatMap map;
        map.show(&r, Fp8Metric::SnrDb);
        QVERIFY(!map.hasValues());
        QVERIFY(map.labelsAt(QSize(600, map.fullHeight())).isEmpty());
        map.show(&r, Fp8Metric::Amax);
        QVERIFY(map.hasValues());
        QCOMPARE(map.labelsAt(QSize(600, map.fullHeight())).size(), 1);

        RunCollection runs;
        runs.add(test::synthetic_record("torch bf16 no fp8", 6, 1, 10));
        runs.add(r);
        Fp8Panel panel(&runs);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        panel.markDirty();
        panel.refreshIfDirty();
        auto* legend = panel.findChild<RunLegend*>(QStringLiteral("legend"));
        QTRY_VERIFY2(legend->text().contains(QStringLiteral("te fp8 plain")), qPrintable(legend->text()));
        QVERIFY2(!legend->text().contains(QStringLiteral("torch bf16 no fp8")), qPrintable(legend->text()));
        // Showing one FP8 run alone hides only the runs the legend names (never lists a run without statistics as
        // hidden), and again shows them all.
        RunRecord second = r;
        second.id = "second-fp8-id";
        second.config.name = "te fp8 second";
        runs.add(second);
        panel.refreshIfDirty();
        panel.showOnly(runs.entries()[1].key);
        QCOMPARE(panel.hiddenRuns(), std::set<int>{runs.entries()[2].key});
        QVERIFY2(!legend->text().contains(QStringLiteral("no fp8")), qPrintable(legend->text()));
        panel.showOnly(runs.entries()[1].key);
        QVERIFY(panel.hiddenRuns().empty());

        Fp8Inspector inspector(&runs);
        QTableWidget* table = inspector.whatIfTable();
        QVERIFY(table->minimumHeight() >= table->horizontalHeader()->sizeHint().height() + 4 * table->verticalHeader()->defaultSectionSize());
    }

    // The PDF report never leaves a section heading alone at the foot of a page (the "Runs" heading did): with
    // text that puts the heading on a page's last line, it moves to the next page with its table.
    void reportHeadingsStayWithWhatFollows() {
        bool orphaned = false;
        for (int paragraphs = 1; paragraphs < 80 && !orphaned; ++paragraphs) {
            QString html;
            for (int i = 0; i < paragraphs; ++i) html += QStringLiteral("<p>Line %1 of the machine section.</p>").arg(i);
            html += QStringLiteral("<h2>Runs</h2><table><tr><td>run</td><td>ms</td></tr><tr><td>te bf16</td><td>1.0</td></tr></table>");
            QTextDocument document;
            document.setHtml(html);
            document.setPageSize(QSizeF(400, 300));
            document.pageCount();
            const double page = document.pageSize().height();
            QTextBlock heading = document.begin();
            while (heading.isValid() && heading.text() != QStringLiteral("Runs")) heading = heading.next();
            QVERIFY(heading.isValid());
            const auto page_of_top = [&](const QTextBlock& b) {
                return static_cast<int>((document.documentLayout()->blockBoundingRect(b).top() + b.layout()->lineAt(0).y()) / page);
            };
            if (page_of_top(heading.next()) <= page_of_top(heading)) continue;
            orphaned = true;
            QCOMPARE(keep_headings_with_what_follows(document), 1);
            document.pageCount();
            QCOMPARE(page_of_top(heading), page_of_top(heading.next()));
        }
        QVERIFY2(orphaned, "no paragraph count put the heading at a page's foot");
    }

    // Every slot of the heat map has its full name, underscores kept; a map squeezed below one label line
    // per row labels some rows and says so.
    void heatMapLabelsEveryRowWithItsFullName() {
        RunRecord r = test::synthetic_record("te fp8", 6, 1, 10);
        for (int layer = 0; layer < 4; ++layer) {
            for (const SlotRole role : {SlotRole::Input, SlotRole::Weight, SlotRole::GradOutput}) {
                r.fp8_slots.push_back({"blocks_" + std::to_string(layer) + ".mlp.fc1", role, Fp8Dtype::E4M3});
            }
        }
        for (StepMetrics& s : r.steps) s.fp8.assign(r.fp8_slots.size(), Fp8SlotSample{1.0f, 2.0f, 0.0f, 0.0f, 1e-3f, 1e-3f, 1e-3f});
        Fp8HeatMap map;
        map.show(&r, Fp8Metric::SnrDb);
        QCOMPARE(map.minimumHeight(), map.fullHeight());
        const QStringList labels = map.labelsAt(QSize(900, map.fullHeight()));
        QCOMPARE(labels.size(), 12);
        QCOMPARE(labels.front(), QStringLiteral("blocks_0.mlp.fc1 · input"));
        QCOMPARE(labels.back(), QStringLiteral("blocks_3.mlp.fc1 · grad_output"));
        const QStringList squeezed = map.labelsAt(QSize(900, 100));
        QVERIFY(squeezed.size() < 12 && squeezed.size() > 1);
        for (const QString& label : squeezed) QVERIFY2(labels.contains(label), qPrintable(label));  // whole names, not cut
    }

    // The dark theme reaches every chart: background, axes' labels and grid differ from the light theme's.
    void darkThemeCoversEveryChart() {
        const ChartColours light = chart_colours(false);
        const ChartColours dark = chart_colours(true);
        QVERIFY(light.background != dark.background && light.text != dark.text && light.grid != dark.grid);
        QVERIFY(dark.background.lightness() < 80 && dark.text.lightness() > 180);

        RunCollection runs;
        runs.add(test::synthetic_record("a", 20, 2, 5));
        MetricPlot plot(loss_metric());
        PlotOptions o;
        o.dark = true;
        plot.setOptions(o);
        plot.refresh(runs);
        QCOMPARE(plot.backgroundBrush().color(), dark.background);
        for (QAbstractAxis* axis : plot.axes()) {
            QCOMPARE(axis->labelsColor(), dark.text);
            QCOMPARE(axis->gridLineColor(), dark.grid);
        }
        o.log_y = true;  // a new axis takes the theme too
        plot.setOptions(o);
        QCOMPARE(plot.axes(Qt::Vertical).front()->labelsColor(), dark.text);
        o.dark = false;
        plot.setOptions(o);
        QCOMPARE(plot.backgroundBrush().color(), light.background);
        QCOMPARE(plot.axes(Qt::Horizontal).front()->labelsColor(), light.text);
        const QImage exported = plot.renderImage(runs, QSize(300, 200), 1.0);
        QCOMPARE(exported.pixelColor(2, 2), light.background);

        RunRecord b = test::synthetic_record("b", 10, 2, 10);
        b.summary.breakdown = StepBreakdown{4.0, 5.0, 1.0, 0.0, 0.0};
        TimeBreakdownChart bars;
        bars.show({b});
        bars.setDark(true);
        QCOMPARE(bars.chart()->backgroundBrush().color(), dark.background);
        QCOMPARE(bars.chart()->legend()->labelColor(), dark.text);
        for (QAbstractAxis* axis : bars.chart()->axes()) QCOMPARE(axis->labelsColor(), dark.text);
        QCOMPARE(bars.values(StepSegment::Forward), std::vector<double>{4.0});  // the theme leaves the bars' colours
        bars.setDark(false);
        QCOMPARE(bars.chart()->backgroundBrush().color(), light.background);

        RunCollection dashboard;
        RunCollection sweepRuns;
        SweepPanel sweep(&dashboard, &sweepRuns);
        QCOMPARE(sweep.renderChart(QSize(300, 200), 1.0).pixelColor(2, 2), light.background);
        sweep.setDark(true);
        QCOMPARE(sweep.renderChart(QSize(300, 200), 1.0).pixelColor(2, 2), dark.background);
    }

    // A narrow panel puts its charts in fewer columns instead of asking for three charts' width (a 1024-px
    // screen scrolled the dashboard sideways); its minimum is one chart's width.
    void chartsReflowIntoTheWidthTheyHave() {
        RunCollection runs;
        QWidget page;  // as in the dashboard: the panel inside a page whose layout asks for its minimum
        auto* layout = new QVBoxLayout(&page);
        auto* panel = new ChartsPanel(&runs, {loss_metric(), step_ms_metric(), memory_metric()}, 3);
        layout->addWidget(panel);
        const int chart = panel->views().front()->minimumWidth();
        QVERIFY2(panel->minimumSizeHint().width() < 2 * chart, qPrintable(QString::number(panel->minimumSizeHint().width())));
        // Three legible charts side by side need a wider screen than 1280 px (a window manager keeps the page
        // inside the screen): checked where the screen holds them.
        const bool threeFit = page.screen()->availableGeometry().width() >= 3 * chart + 260 ||
                              QGuiApplication::platformName() == QLatin1String("offscreen");
        page.resize(threeFit ? 3 * chart + 200 : 2 * chart + 60, 700);
        page.show();
        QVERIFY(QTest::qWaitForWindowExposed(&page));
        QTRY_COMPARE(panel->columns(), threeFit ? 3 : 2);
        page.resize(2 * chart + 60, 700);
        QTRY_COMPARE(panel->columns(), 2);
        page.resize(chart + 40, 900);
        QTRY_COMPARE(panel->columns(), 1);
        for (MetricChartView* view : panel->views()) QVERIFY(view->width() >= chart);
        page.resize(2 * chart + 60, 700);
        QTRY_COMPARE(panel->columns(), 2);
    }

    // The exported dashboard's table says what peak memory is (RSS on the CPU) and gives a CPU run's small
    // TFLOP/s in significant digits, as the window's table does.
    void dashboardTableSaysRssAndSmallTflops() {
        RunCollection runs;
        RunRecord r = test::synthetic_record("torch fp32 cpu", 6, 2, 10);
        r.execution.memory_metric = MemoryMetric::CpuPeakRss;
        r.summary.tflops = 0.0123;
        runs.add(r);
        const QString html = comparison_table_html(runs, {r}, std::size_t{0}, QStringLiteral("#000000"));
        QVERIFY2(html.contains(QStringLiteral("MiB RSS")), qPrintable(html));
        QVERIFY2(html.contains(QStringLiteral("0.0123")), qPrintable(html));
        r.execution.memory_metric = MemoryMetric::CudaPeakAllocated;
        QVERIFY(!comparison_table_html(runs, {r}, std::size_t{0}, QStringLiteral("#000000")).contains(QStringLiteral("RSS")));
    }

    // The Sweep tab's table marks a size whose run (or its baseline) was measured noisily, with the reasons in
    // its tooltip; a clean size reads as a speedup with its interval. The chart (and so its PNG) names the device,
    // the baseline and how many sizes were noisy, and draws the noisy size hollow; the statement does not call
    // the noisy size paying. The form's repeats reach the plan.
    void sweepTableMarksNoisySizes() {
        RunCollection dashboard;
        RunCollection sweepRuns;
        SweepPanel sweep(&dashboard, &sweepRuns);
        SweepSpec spec;
        spec.base = make_preset(Preset::QuickCpu);
        spec.hidden = {64, 128};
        spec.precisions = {Precision::Bf16};
        std::vector<SweepRun> plan = plan_sweep(spec, test::no_gpu());
        QCOMPARE(plan.size(), std::size_t{4});  // each size: its baseline and bf16
        const QString name = sweep.newSweepName();
        sweep.follow(plan);
        for (const SweepRun& run : plan) {
            const bool bf16 = !run.baseline;
            RunRecord r = test::synthetic_record(run.config.name, 6, 2, bf16 ? 8.0 : 10.0);
            r.config = run.config;
            MeasurementQuality q;
            q.cv = bf16 && run.point.hidden == 128 ? 0.25 : 0.02;
            judge_quality(q);
            r.execution.quality = q;
            sweepRuns.add(r, std::nullopt, name);
        }
        QVERIFY(sweep.result().has_value());
        QTableWidget* table = sweep.table();
        QCOMPARE(table->rowCount(), 2);
        const int speedupColumn = 6;
        const QString clean = table->item(0, speedupColumn)->text();
        const QString noisy = table->item(1, speedupColumn)->text();
        QVERIFY2(clean.contains(QStringLiteral("× [")) && !clean.contains(QStringLiteral("noisy")), qPrintable(clean));
        QVERIFY2(noisy.contains(QStringLiteral("× [")) && noisy.endsWith(QStringLiteral(" noisy")), qPrintable(noisy));
        QVERIFY2(table->item(1, speedupColumn)->toolTip().contains(QStringLiteral("25")),
                 qPrintable(table->item(1, speedupColumn)->toolTip()));
        QVERIFY2(table->item(0, speedupColumn)->toolTip().contains(QStringLiteral("95% interval over 4 timed steps")),
                 qPrintable(table->item(0, speedupColumn)->toolTip()));
        const QString title = sweep.chart()->title();
        QVERIFY2(title.contains(QStringLiteral("against torch FP32")) && title.contains(QStringLiteral("CPU")) &&
                     title.contains(QStringLiteral("one run per size")) && title.contains(QStringLiteral("1 noisy")),
                 qPrintable(title));
        int hollow = 0;
        for (QAbstractSeries* s : sweep.chart()->series()) {
            auto* scatter = qobject_cast<QScatterSeries*>(s);
            if (scatter && scatter->name().startsWith(QStringLiteral("hollow"))) hollow += scatter->count();
        }
        QCOMPARE(hollow, 1);
        const QString said = sweep.statement()->text();
        QVERIFY2(said.contains(QStringLiteral("pays from hidden 64")) == false && said.contains(QStringLiteral("count as neither")),
                 qPrintable(said));
        sweep.repeatsField()->setValue(3);
        QCOMPARE(sweep.spec(spec.base).repeats, 3);
    }

    // Widgets with a style sheet of their own follow the theme too (a label in a scroll area with a red text
    // colour kept the light background in the dark theme).
    void darkThemeReachesWidgetsWithStyleSheets() {
        QWidget panel;  // like the run setup: a sheet on the panel, another on the label
        panel.setStyleSheet(QStringLiteral("*[problem=\"true\"] { border: 2px solid #d32f2f; }"));
        auto* layout = new QVBoxLayout(&panel);
        auto* area = new QScrollArea(&panel);
        area->setWidgetResizable(true);
        auto* label = new QLabel(QStringLiteral("Hidden size 130 is not divisible by Heads 4"));
        label->setStyleSheet(QStringLiteral("color: #d32f2f;"));
        area->setWidget(label);
        layout->addWidget(area);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        apply_theme(true);
        QTest::qWait(10);
        const QColor dark = label->grab().toImage().pixelColor(label->width() - 2, label->height() - 2);
        apply_theme(false);
        QTest::qWait(10);
        const QColor light = label->grab().toImage().pixelColor(label->width() - 2, label->height() - 2);
        QVERIFY2(dark.lightness() < 90, qPrintable(dark.name()));
        QVERIFY2(light.lightness() > 180, qPrintable(light.name()));
    }

    // A legend click hides a run from every chart of the group (its entry stays, marked, to show it again); a double
    // click shows it alone, and again shows every run; "Show every run" ends it all.
    void legendClickHidesAndDoubleClickSolos() {
        RunCollection runs;
        for (const char* name : {"alpha", "beta", "gamma"}) runs.add(test::synthetic_record(name, 20, 5, 10));
        ChartsPanel panel(&runs, {loss_metric(), step_ms_metric()}, 2);
        panel.resize(1000, 700);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        panel.refreshIfDirty();
        RunLegend* legend = panel.legend();
        const int beta = runs.entries()[1].key;
        const auto traced = [](MetricChartView* view) {
            QStringList names;
            for (const MetricPlot::Trace& t : view->plot()->traces()) names << t.name;
            return names.join(QStringLiteral(","));
        };
        const auto click = [legend](int key, bool twice) {
            const QPoint at = legend->visualItemRect(legend->itemOf(key)).center();
            if (twice) {
                QTest::mouseDClick(legend->viewport(), Qt::LeftButton, {}, at);
            } else {
                QTest::mouseClick(legend->viewport(), Qt::LeftButton, {}, at);
            }
        };
        click(beta, false);
        QCOMPARE(panel.hiddenRuns(), std::set<int>{beta});
        for (MetricChartView* view : panel.views()) QCOMPARE(traced(view), QStringLiteral("alpha,gamma"));
        QVERIFY2(legend->text().contains(QStringLiteral("beta (hidden)")), qPrintable(legend->text()));
        click(beta, false);
        QVERIFY(panel.hiddenRuns().empty());
        QCOMPARE(traced(panel.views().front()), QStringLiteral("alpha,beta,gamma"));

        // A user's double click is a click (press, release: it toggles) and then the double click (it solos); QTest's
        // mouseDClick sends the double-click event alone, so the click comes first.
        QTest::mouseClick(legend->viewport(), Qt::LeftButton, {}, legend->visualItemRect(legend->itemOf(beta)).center());
        QTest::mouseDClick(legend->viewport(), Qt::LeftButton, {}, legend->visualItemRect(legend->itemOf(beta)).center());
        QCOMPARE(traced(panel.views().back()), QStringLiteral("beta"));
        QTest::mouseClick(legend->viewport(), Qt::LeftButton, {}, legend->visualItemRect(legend->itemOf(beta)).center());
        QTest::mouseDClick(legend->viewport(), Qt::LeftButton, {}, legend->visualItemRect(legend->itemOf(beta)).center());
        QCOMPARE(traced(panel.views().back()), QStringLiteral("alpha,beta,gamma"));
        // From the keyboard: Space hides the current run, Enter shows it alone.
        legend->setCurrentItem(legend->itemOf(beta));
        QTest::keyClick(legend, Qt::Key_Space);
        QCOMPARE(panel.hiddenRuns(), std::set<int>{beta});
        QTest::keyClick(legend, Qt::Key_Space);
        QTest::keyClick(legend, Qt::Key_Return);
        QCOMPARE(traced(panel.views().back()), QStringLiteral("beta"));
        panel.showOnly(runs.entries()[0].key);
        QCOMPARE(traced(panel.views().back()), QStringLiteral("alpha"));
        panel.showEveryRun();
        QCOMPARE(traced(panel.views().back()), QStringLiteral("alpha,beta,gamma"));
        // The run filter: only names holding its text (any case) are drawn and listed; the legend says how many are out.
        auto* filter = panel.findChild<QLineEdit*>(QStringLiteral("runFilter"));
        QVERIFY(filter);
        filter->setText(QStringLiteral("AMM"));
        QCOMPARE(traced(panel.views().front()), QStringLiteral("gamma"));
        QVERIFY2(legend->text().contains(QStringLiteral("2 runs filtered out by \"AMM\"")) && !legend->text().contains(QStringLiteral("alpha")),
                 qPrintable(legend->text()));
        filter->clear();
        QCOMPARE(traced(panel.views().front()), QStringLiteral("alpha,beta,gamma"));

        // A run removed while hidden leaves nothing behind.
        panel.toggleRun(beta);
        runs.remove(beta);
        QVERIFY(panel.hiddenRuns().empty());

        // A theme change reaches the names: a shown run's takes the new text colour, a hidden run's the faded one.
        panel.refreshIfDirty();
        panel.toggleRun(runs.entries()[0].key);
        apply_theme(true);
        QTest::qWait(10);
        QCOMPARE(legend->itemOf(runs.entries()[1].key)->foreground().style(), Qt::NoBrush);
        QCOMPARE(legend->itemOf(runs.entries()[0].key)->foreground().color(),
                 legend->palette().color(QPalette::Disabled, QPalette::Text));
        apply_theme(false);
        QTest::qWait(10);
        QCOMPARE(legend->itemOf(runs.entries()[0].key)->foreground().color(),
                 legend->palette().color(QPalette::Disabled, QPalette::Text));
    }

    // The legend's height is fixed: a validation line's longer notes or twelve runs never push the charts down.
    void legendNeverPushesTheCharts() {
        RunCollection runs;
        runs.add(test::synthetic_record("plain", 20, 5, 10));
        ChartsPanel panel(&runs, {loss_metric(), step_ms_metric(), memory_metric()}, 3);
        panel.resize(900, 700);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        panel.refreshIfDirty();
        const int top = panel.chartArea()->geometry().top();
        RunRecord onFile = test::synthetic_record("a llama on a token file with a long name", 20, 5, 10);
        for (StepMetrics& s : onFile.steps) s.val_loss = s.loss;
        runs.add(onFile);
        for (int i = 0; i < 10; ++i) runs.add(test::synthetic_record("another run number " + std::to_string(i), 20, 5, 10));
        panel.refreshIfDirty();
        QVERIFY2(panel.legend()->text().contains(QStringLiteral("validation loss")), qPrintable(panel.legend()->text()));
        QTest::qWait(50);  // a layout the new entries asked for has run by now
        QTRY_COMPARE(panel.chartArea()->geometry().top(), top);
    }

    // A double click enlarges a chart to the whole chart area (the others hidden), again or "Show every chart"
    // brings them back; a chart opens in a window of its own that follows the runs and is gone when closed.
    void chartsEnlargeAndOpenInTheirOwnWindow() {
        RunCollection runs;
        runs.add(test::synthetic_record("first", 20, 5, 10));
        ChartsPanel panel(&runs, {loss_metric(), step_ms_metric(), memory_metric()}, 3);
        panel.resize(1400, 800);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        MetricChartView* loss = panel.views()[0];
        const int before = loss->width();
        QTest::mouseDClick(loss->viewport(), Qt::LeftButton, {}, loss->viewport()->rect().center());
        QCOMPARE(panel.enlarged(), loss);
        QVERIFY(!panel.views()[1]->isVisible() && !panel.views()[2]->isVisible());
        auto* showAll = panel.findChild<QPushButton*>(QStringLiteral("showEveryChart"));
        QVERIFY(showAll->isVisible());
        QTRY_VERIFY2(loss->width() >= panel.chartArea()->viewport()->width() - 20,
                     qPrintable(QStringLiteral("%1 -> %2 of %3").arg(before).arg(loss->width()).arg(panel.chartArea()->viewport()->width())));
        QVERIFY(loss->width() > before);
        QTest::mouseDClick(loss->viewport(), Qt::LeftButton, {}, loss->viewport()->rect().center());
        QCOMPARE(panel.enlarged(), nullptr);
        QVERIFY(panel.views()[1]->isVisible() && !showAll->isVisible());
        panel.setEnlarged(panel.views()[2]);
        showAll->click();
        QCOMPARE(panel.enlarged(), nullptr);

        // The chart's menu offers both.
        QMenu* menu = loss->buildMenu();
        QVERIFY(menu->findChild<QAction*>(QStringLiteral("enlarge")));
        QAction* own = menu->findChild<QAction*>(QStringLiteral("ownWindow"));
        QVERIFY(own);
        own->trigger();
        delete menu;
        QCOMPARE(panel.ownWindowViews().size(), std::size_t{1});
        MetricChartView* detached = panel.ownWindowViews().front();
        QVERIFY(QTest::qWaitForWindowExposed(detached->window()));
        QVERIFY(detached->window() != panel.window());
        QCOMPARE(detached->plot()->spec().id, QStringLiteral("loss"));
        QCOMPARE(detached->plot()->traces().size(), std::size_t{1});
        runs.add(test::synthetic_record("second", 20, 5, 10));
        panel.refreshIfDirty();
        QCOMPARE(detached->plot()->traces().size(), std::size_t{2});
        QVERIFY(detached->window()->width() > panel.views()[0]->width());
        // It follows the runs while the panel's tab is not shown.
        panel.hide();
        runs.add(test::synthetic_record("third", 20, 5, 10));
        panel.refreshIfDirty();
        QCOMPARE(detached->plot()->traces().size(), std::size_t{3});
        QCOMPARE(panel.views()[0]->plot()->traces().size(), std::size_t{2});  // the hidden panel catches up when shown
        panel.show();
        QTRY_COMPARE(panel.views()[0]->plot()->traces().size(), std::size_t{3});
        detached->window()->close();
        QTRY_VERIFY(panel.ownWindowViews().empty());
        panel.refreshIfDirty();  // nothing left to refresh
    }

    // Each chart has its own log y and y range from its menu; the panel's log y sets every chart's again.
    void chartsHaveTheirOwnLogYAndRange() {
        RunCollection runs;
        runs.add(test::synthetic_record("first", 20, 5, 10));
        ChartsPanel panel(&runs, {loss_metric(), step_ms_metric()}, 2);
        panel.resize(1000, 600);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        MetricChartView* loss = panel.views()[0];
        MetricChartView* ms = panel.views()[1];
        QMenu* menu = loss->buildMenu();
        menu->findChild<QAction*>(QStringLiteral("logY"))->trigger();
        delete menu;
        QVERIFY(loss->plot()->options().log_y);
        QVERIFY(!ms->plot()->options().log_y);
        QVERIFY(qobject_cast<QLogValueAxis*>(loss->plot()->axes(Qt::Vertical).front()));
        auto* panelLog = panel.findChild<QCheckBox*>(QStringLiteral("logY"));
        panelLog->setChecked(true);
        panelLog->setChecked(false);
        QVERIFY(!loss->plot()->options().log_y);
        QVERIFY(!loss->ownLogY().has_value());

        ms->plot()->setYRange(YRange{0, 50});
        panel.refreshIfDirty();
        auto* axis = qobject_cast<QValueAxis*>(ms->plot()->axes(Qt::Vertical).front());
        QCOMPARE(axis->min(), 0.0);
        QCOMPARE(axis->max(), 50.0);
        QVERIFY2(ms->plot()->title().contains(QStringLiteral("y range fixed")), qPrintable(ms->plot()->title()));
        runs.add(test::synthetic_record("slow", 20, 5, 90));  // data above the range: the range holds
        panel.markDirty();
        panel.refreshIfDirty();
        QCOMPARE(axis->max(), 50.0);
        ms->plot()->setYRange(std::nullopt);
        QVERIFY2(axis->max() >= 90.0, qPrintable(QString::number(axis->max())));

        // The range as typed: which value is wrong and why.
        QCOMPARE(parse_y_range(QStringLiteral("1"), QStringLiteral("2.5e1"), false).range, (std::optional<YRange>{YRange{1, 25}}));
        QVERIFY(parse_y_range(QStringLiteral("abc"), QStringLiteral("2"), false).error.contains(QStringLiteral("lowest y 'abc'")));
        QVERIFY(parse_y_range(QStringLiteral("1"), QStringLiteral("inf"), false).error.contains(QStringLiteral("highest y 'inf'")));
        QVERIFY(parse_y_range(QStringLiteral("3"), QStringLiteral("2"), false).error.contains(QStringLiteral("below highest")));
        QVERIFY(parse_y_range(QStringLiteral("0"), QStringLiteral("2"), true).error.contains(QStringLiteral("logarithmic")));
        YRangeDialog dialog(QStringLiteral("Loss"), YRange{0, 4}, false);
        QVERIFY(dialog.acceptable());
        dialog.highField()->setText(QStringLiteral("-1"));
        QVERIFY(!dialog.acceptable());
        QVERIFY(!dialog.problem()->text().isEmpty());
        std::optional<YRange> chosen;
        connect(&dialog, &YRangeDialog::rangeChosen, this, [&chosen](const YRange& r) { chosen = r; });
        dialog.highField()->setText(QStringLiteral("3"));
        QVERIFY(dialog.acceptable());
        dialog.accept();
        QVERIFY(!chosen);  // accept() alone is not OK: only the button emits the range
        dialog.findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok)->click();
        QCOMPARE(chosen, (std::optional<YRange>{YRange{0, 3}}));
    }

    // The x axis by tokens: each step at its tokens trained (every rank's), in thousands.
    void xAxisByTokens() {
        RunCollection runs;
        RunRecord r = test::synthetic_record("tokens", 10, 2, 10);
        r.config.batch = 4;
        r.config.model.seq = 50;
        runs.add(r);
        MetricPlot plot(loss_metric());
        PlotOptions o;
        o.x = XAxis::Tokens;
        plot.setOptions(o);
        plot.refresh(runs);
        QCOMPARE(plot.traces().front().raw[3].x(), r.steps[3].step * 0.2);
        QCOMPARE(plot.axes(Qt::Horizontal).front()->titleText(), QStringLiteral("tokens (thousands)"));
        ChartControls controls;
        controls.findChild<QComboBox*>(QStringLiteral("xAxis"))->setCurrentIndex(1);
        QCOMPARE(controls.options().x, XAxis::Tokens);
        controls.findChild<QComboBox*>(QStringLiteral("xAxis"))->setCurrentIndex(2);
        QCOMPARE(controls.options().x, XAxis::Time);
    }

    // With seven runs of long names on a small chart the hover label stays inside the plot (names shortened, rows
    // cut with "… and N more"), and the run nearest the pointer is bold in it and drawn wider.
    void hoverFitsAndHighlightsTheNearestLine() {
        RunCollection runs;
        for (int i = 0; i < 7; ++i) {
            RunRecord r = test::synthetic_record("te fp8 delayed scaling with a very long descriptive name number " +
                                                     std::to_string(i),
                                                 40, 10, 10);
            for (StepMetrics& s : r.steps) s.loss += i;
            runs.add(r);
        }
        MetricChartView view(loss_metric());
        view.resize(view.minimumSize());
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.plot()->refresh(runs);
        view.plot()->refresh(runs);
        const QRectF area = view.plot()->plotArea();
        QVERIFY2(area.width() >= 360 && area.height() >= 180, qPrintable(QStringLiteral("%1×%2").arg(area.width()).arg(area.height())));
        const int top = runs.entries()[6].key;  // highest loss
        const QPointF onTop = view.plot()->mapToPosition(QPointF(20, runs.entries()[6].record.steps[19].loss));
        QCOMPARE(view.nearestRunAt(20, onTop.y()), top);
        view.showCrosshairAt(20, onTop.y());
        QCOMPARE(view.plot()->highlighted(), top);
        const QRectF label = view.crosshairLabelRect();
        QVERIFY2(area.contains(label), qPrintable(QStringLiteral("label %1,%2 %3×%4 in %5,%6 %7×%8")
                                                      .arg(label.x()).arg(label.y()).arg(label.width()).arg(label.height())
                                                      .arg(area.x()).arg(area.y()).arg(area.width()).arg(area.height())));
        const QString text = view.crosshairText(20, top);
        QVERIFY2(text.contains(QStringLiteral("<b><span")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("…")), qPrintable(text));  // long names shortened in the middle
        view.hideCrosshair();
        QCOMPARE(view.plot()->highlighted(), 0);
        // A short plot lists what fits and says how many more there are.
        view.setMinimumSize(0, 0);
        view.resize(440, 160);
        QTRY_VERIFY(view.plot()->plotArea().height() < 120);
        QVERIFY2(view.crosshairText(20).contains(QStringLiteral("more")), qPrintable(view.crosshairText(20)));
    }
};

QTEST_MAIN(TestCharts)
#include "tst_charts.moc"

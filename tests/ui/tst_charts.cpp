#include <QtTest>

#include <cmath>

#include <QComboBox>
#include <QLabel>
#include <QLineSeries>
#include <QTableView>
#include <QLogValueAxis>
#include <QValueAxis>

#include "UiTestSupport.h"
#include "core/common/Error.h"
#include "core/results/LedgerReport.h"
#include "ui/charts/LedgerSummary.h"
#include "ui/charts/TopKernelsPanel.h"
#include "ui/charts/MetricChartView.h"
#include "ui/charts/MetricPlot.h"
#include "ui/charts/SeriesMath.h"
#include "ui/export/Export.h"
#include "ui/report/Report.h"
#include "ui/runs/RunCollection.h"

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
        measured.execution.ledger = make_ledger({{0, "qkv", "tewb::layer_norm_forward", 1, 1, true, 1024, 512},
                                                 {0, "qkv", "aten::mm", 2, 2, false, 4096, 2048},
                                                 {-1, "optimizer", "aten::_fused_adamw_", 1, 3, false, 100, 50}},
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
        view.plot()->zoomIn(QRectF(view.plot()->plotArea().center(), QSizeF(100, 100)));
        QVERIFY(view.plot()->isZoomed());
        auto* x = qobject_cast<QValueAxis*>(view.plot()->axes(Qt::Horizontal).front());
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
};

QTEST_MAIN(TestCharts)
#include "tst_charts.moc"

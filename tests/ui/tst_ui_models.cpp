#include <QtTest>

#include <QAbstractItemModelTester>
#include <QAbstractButton>
#include <QAction>
#include <QClipboard>
#include <QStandardItemModel>
#include <QApplication>
#include <QFileDialog>
#include <QHeaderView>
#include <QLineEdit>
#include <QMainWindow>
#include <QMessageBox>
#include <QScrollBar>
#include <QPushButton>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QStatusBar>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTimer>

#include <array>
#include <cmath>
#include <set>

#include "UiTestSupport.h"
#include "core/common/Error.h"
#include "core/results/AtomicFile.h"
#include "ui/common/RememberedFolder.h"
#include "ui/common/RunTable.h"
#include "ui/common/RunColors.h"
#include "ui/common/Theme.h"
#include "ui/export/SaveNotice.h"
#include "ui/history/HistoryModel.h"
#include "ui/history/HistoryPanel.h"
#include "ui/runs/RunMirror.h"
#include "ui/runs/RunViewActions.h"
#include "ui/runs/RunCollection.h"
#include "ui/runs/RunController.h"
#include "ui/runs/RunQueueModel.h"
#include "ui/runs/RunWorker.h"
#include "ui/charts/TimeBreakdownChart.h"
#include "ui/table/ComparisonModel.h"
#include "ui/table/SettingsDiffDialog.h"
#include "ui/table/ComparisonPanel.h"

using namespace tewb;
using namespace tewb::ui;

namespace {

// WCAG contrast ratio of two colours.
double contrast(const QColor& a, const QColor& b) {
    const auto luminance = [](const QColor& c) {
        const auto channel = [](double v) { return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
        return 0.2126 * channel(c.redF()) + 0.7152 * channel(c.greenF()) + 0.0722 * channel(c.blueF());
    };
    const double la = luminance(a);
    const double lb = luminance(b);
    return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

// Distance of two colours in CIELAB (D65): about 2.3 is just noticeable, above 10 clearly different.
double lab_distance(const QColor& a, const QColor& b) {
    const auto lab = [](const QColor& c) {
        const auto linear = [](double v) { return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
        const double r = linear(c.redF());
        const double g = linear(c.greenF());
        const double bl = linear(c.blueF());
        const double x = (0.4124 * r + 0.3576 * g + 0.1805 * bl) / 0.95047;
        const double y = 0.2126 * r + 0.7152 * g + 0.0722 * bl;
        const double z = (0.0193 * r + 0.1192 * g + 0.9505 * bl) / 1.08883;
        const auto f = [](double t) { return t > 0.008856 ? std::cbrt(t) : 7.787 * t + 16.0 / 116.0; };
        return std::array<double, 3>{116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))};
    };
    const auto p = lab(a);
    const auto q = lab(b);
    return std::hypot(p[0] - q[0], p[1] - q[1], p[2] - q[2]);
}

}  // namespace

class TestUiModels : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // A queued run's name says "emulated FP8" exactly when core's RunFacts say its FP8 GEMMs will be emulated:
    // on the CPU, with the reference on a GPU, and block scaling without cuBLASLt's block GEMMs.
    void queuedRunsSayWhenFp8IsEmulated() {
        DeviceInfo hopper;
        hopper.gpu_name = "NVIDIA H200";
        hopper.compute_capability = ComputeCapability{9, 0};
        hopper.fused_cuda_kernels = true;
        hopper.block_fp8_gemms = true;
        DeviceInfo ada = hopper;  // FP8 GEMMs, but no block-scaled ones
        ada.gpu_name = "NVIDIA L40S";
        ada.compute_capability = ComputeCapability{8, 9};
        ada.block_fp8_gemms = false;
        DeviceInfo cpu;
        cpu.gpu_error = "no CUDA-capable device is detected";
        struct Case {
            DeviceInfo device;
            TeImpl impl;
            ScalingKind scaling;
            bool emulated;
        };
        const std::vector<Case> cases = {{hopper, TeImpl::Auto, ScalingKind::Delayed, false},
                                         {hopper, TeImpl::Reference, ScalingKind::Delayed, true},
                                         {hopper, TeImpl::Auto, ScalingKind::Block, false},
                                         {ada, TeImpl::Auto, ScalingKind::Block, true},
                                         {ada, TeImpl::Auto, ScalingKind::Current, false},
                                         {cpu, TeImpl::Fused, ScalingKind::Delayed, true}};
        for (const Case& c : cases) {
            RunCollection runs;
            RunController controller(&runs);  // a controller's device is set once
            controller.setDevice(c.device);
            RunConfig config = make_preset(Preset::QuickCpu);
            config.device = DeviceKind::Auto;  // the preset asks for the CPU
            config.backend = Backend::Te;
            config.precision = Precision::Fp8;
            config.te_impl = c.impl;
            config.fp8.scaling = c.scaling;
            config.name = c.device.gpu_name + " " + std::string(to_string(c.impl)) + " " + std::string(to_string(c.scaling));
            const std::optional<QString> refused = controller.enqueue(config);
            QVERIFY2(!refused, refused ? qPrintable(*refused) : "");
            const QString name = controller.queue()->data(controller.queue()->index(0, RunQueueModel::Name)).toString();
            QVERIFY2(name.contains(QStringLiteral("emulated FP8")) == c.emulated, qPrintable(name));
            QCOMPARE(controller.queue()->items().front().fp8_emulated, c.emulated);
        }
        // Blackwell's recipes are emulated below compute capability 10.0, and their queued names say which format.
        for (const ScalingKind scaling : {ScalingKind::Mxfp8, ScalingKind::Nvfp4}) {
            RunCollection runs;
            RunController controller(&runs);
            controller.setDevice(hopper);
            RunConfig config = make_preset(Preset::QuickCpu);
            config.device = DeviceKind::Auto;
            config.backend = Backend::Te;
            config.precision = Precision::Fp8;
            config.fp8.scaling = scaling;
            config.fp8.format = default_recipe_format(scaling);
            config.name = "queued";
            const std::optional<QString> refused = controller.enqueue(config);
            QVERIFY2(!refused, refused ? qPrintable(*refused) : "");
            const QString name = controller.queue()->data(controller.queue()->index(0, RunQueueModel::Name)).toString();
            QCOMPARE(name, scaling == ScalingKind::Mxfp8 ? QStringLiteral("queued (emulated MXFP8)")
                                                         : QStringLiteral("queued (emulated NVFP4)"));
        }
    }

    // A run queued under a name the dashboard or the queue already has gets the smallest free number; the repeats
    // of one configuration share theirs (they are one group); a comparison's rows are numbered as a whole.
    // Ctrl+C on a run table copies it as shown, tab-separated: the header, the selected rows (or every row), the
    // shown columns in their order on screen, tabs and line breaks inside a cell made spaces.
    void runTablesCopyAsTabSeparatedText() {
        QStandardItemModel model(3, 3);
        model.setHorizontalHeaderLabels({QStringLiteral("Run"), QStringLiteral("Hidden"), QStringLiteral("Speedup")});
        const QStringList names{QStringLiteral("a\tb"), QStringLiteral("second"), QStringLiteral("third\nline")};
        for (int row = 0; row < 3; ++row) {
            model.setItem(row, 0, new QStandardItem(names[row]));
            model.setItem(row, 1, new QStandardItem(QStringLiteral("x")));
            model.setItem(row, 2, new QStandardItem(QStringLiteral("%1.00×").arg(row + 1)));
        }
        QTableView view;
        setup_run_table(&view, &model);
        view.setColumnHidden(1, true);
        view.horizontalHeader()->moveSection(2, 0);  // Speedup shown first
        QCOMPARE(table_text(&view), QStringLiteral("Speedup\tRun\n1.00×\ta b\n2.00×\tsecond\n3.00×\tthird line\n"));
        view.selectRow(2);
        QCOMPARE(table_text(&view), QStringLiteral("Speedup\tRun\n3.00×\tthird line\n"));
        auto* copy = view.findChild<QAction*>(QStringLiteral("copyTable"));
        QVERIFY(copy && copy->shortcut() == QKeySequence(QKeySequence::Copy));
        copy->trigger();
        QCOMPARE(QGuiApplication::clipboard()->text(), table_text(&view));
    }

    // Two selected runs of the comparison table: their differing settings in a dialog, one row each with both values;
    // nothing with one run selected.
    void comparisonShowsTheSettingsTwoRunsDifferIn() {
        RunCollection runs;
        RunRecord wide = test::synthetic_record("wide", 6, 1, 10);
        wide.config.model.hidden = 512;
        runs.add(test::synthetic_record("narrow", 6, 1, 10));
        runs.add(wide);
        ComparisonPanel panel(&runs);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        panel.view()->selectRow(0);
        QCOMPARE(panel.showSettingsDiff(), nullptr);
        panel.view()->selectAll();
        SettingsDiffDialog* dialog = panel.showSettingsDiff();
        QVERIFY(dialog);
        QTableWidget* table = dialog->table();
        QStringList settings;
        for (int row = 0; row < table->rowCount(); ++row) settings << table->item(row, 0)->text();
        QVERIFY2(settings.contains(QStringLiteral("hidden")) && settings.contains(QStringLiteral("name")),
                 qPrintable(settings.join(QStringLiteral(", "))));
        const int hidden = static_cast<int>(settings.indexOf(QStringLiteral("hidden")));
        QCOMPARE(table->item(hidden, 2)->text(), QStringLiteral("512"));
        QVERIFY(table->horizontalHeaderItem(1)->text().startsWith(QStringLiteral("narrow")));
        dialog->close();
    }

    void repeatedNamesGetANumber() {
        RunCollection runs;
        RunController controller(&runs);
        DeviceInfo cpu;
        controller.setDevice(cpu);
        RunConfig config = make_preset(Preset::QuickCpu);
        config.name = "te try";
        runs.add(test::synthetic_record("te try", 0, 0, 0));
        QVERIFY(!controller.enqueue(config));
        QVERIFY(!controller.enqueue(config, 3));
        config.name = "te try #2";  // "Run again" of a numbered run
        QVERIFY(!controller.enqueue(config));
        const auto& items = controller.queue()->items();
        QCOMPARE(items.size(), std::size_t{5});
        QCOMPARE(items[0].config.name, std::string("te try #2"));
        for (std::size_t i = 1; i <= 3; ++i) QCOMPARE(items[i].config.name, std::string("te try #3"));
        QCOMPARE(items[4].config.name, std::string("te try #4"));
        RunConfig base = make_preset(Preset::QuickCpu);
        QVERIFY(!controller.enqueueComparison(base, 1));
        QVERIFY(!controller.enqueueComparison(base, 1));
        std::set<std::string> names{"te try"};
        for (std::size_t i = 0; i < controller.queue()->items().size(); ++i) {
            if (i >= 2 && i <= 3) continue;  // the repeats share item 1's name
            const std::string& name = controller.queue()->items()[i].config.name;
            QVERIFY2(names.insert(name).second, name.c_str());  // every other queued name distinct
        }
        QVERIFY(names.size() > 6);
    }

    void queueModel() {
        RunQueueModel queue;
        QAbstractItemModelTester tester(&queue, QAbstractItemModelTester::FailureReportingMode::QtTest);
        RunConfig config = make_preset(Preset::QuickCpu);
        config.name = "first";
        const int first = queue.append(config);
        config.name = "second";
        const int second = queue.append(config);
        const int skipped = queue.append(config, RunQueueModel::State::Skipped, QStringLiteral("needs a GPU"));
        QCOMPARE(queue.rowCount(), 3);
        QCOMPARE(queue.nextQueued(), first);
        queue.setState(first, RunQueueModel::State::Running);
        queue.setProgress(first, 30, 3000);
        QCOMPARE(queue.data(queue.index(0, RunQueueModel::Progress)).toString(), QStringLiteral("30 of 60"));
        QCOMPARE(queue.data(queue.index(0, RunQueueModel::Progress), RunQueueModel::ProgressRole).toDouble(), 0.5);
        QCOMPARE(queue.data(queue.index(0, RunQueueModel::Eta)).toString(), QStringLiteral("3 s"));
        QCOMPARE(queue.data(queue.index(2, RunQueueModel::Status)).toString(), QStringLiteral("not run here"));
        QCOMPARE(queue.data(queue.index(2, RunQueueModel::Name), Qt::ToolTipRole).toString(), QStringLiteral("needs a GPU"));
        QCOMPARE(queue.nextQueued(), second);
        queue.setState(first, RunQueueModel::State::Finished, QStringLiteral("saved as run 1"));
        QVERIFY(queue.data(queue.index(0, RunQueueModel::Eta)).toString().isEmpty());
        queue.removeDone();
        QCOMPARE(queue.rowCount(), 1);
        QCOMPARE(queue.items().front().ticket, second);
        QVERIFY(!queue.item(skipped));
        queue.removeQueued();
        QCOMPARE(queue.rowCount(), 0);
        QCOMPARE(RunQueueModel::durationText(125000), QStringLiteral("2 min 5 s"));

        // The setup column names a llama and its KV heads, and the token file a run trains on; a gpt on synthetic
        // tokens says neither.
        RunConfig llama = make_preset(Preset::QuickCpu);
        queue.append(llama);
        llama.model.arch = Arch::Llama;
        llama.model.kv_heads = 2;
        llama.data.path = "/corpora/shakespeare.txt";
        queue.append(llama);
        const QString gpt = queue.data(queue.index(0, RunQueueModel::Setup)).toString();
        QCOMPARE(gpt, QStringLiteral("torch auto cpu · 2×128, batch 8"));
        QCOMPARE(queue.data(queue.index(1, RunQueueModel::Setup)).toString(),
                 QStringLiteral("torch auto cpu · 2×128, batch 8 · llama, 2 KV heads · shakespeare.txt"));
    }

    // An emulated FP8 run faster than the baseline is still not a speedup: the cell says "emulated", the tooltip
    // gives the measured ratio as the emulation's cost, and the interval column gives none.
    void emulatedRunsShowNoSpeedup() {
        RunCollection runs;
        ComparisonModel model(&runs);
        runs.add(test::synthetic_record("torch fp32 cpu", 20, 5, 20));  // mean 21 ms
        RunRecord emulated = test::synthetic_record("te fp8 cpu", 20, 5, 10);  // mean 11 ms
        emulated.execution.fp8_emulated = true;
        runs.add(emulated);
        QCOMPARE(model.data(model.index(1, ComparisonModel::Speedup)).toString(), QStringLiteral("emulated"));
        const QString tip = model.data(model.index(1, ComparisonModel::Speedup), Qt::ToolTipRole).toString();
        QVERIFY2(tip.contains(QStringLiteral("1.91×")) && tip.contains(QStringLiteral("emulation's cost")), qPrintable(tip));
        QCOMPARE(model.data(model.index(1, ComparisonModel::SpeedupInterval)).toString(), QStringLiteral("–"));
        QCOMPARE(model.data(model.index(0, ComparisonModel::Speedup)).toString(), QStringLiteral("1.00×"));
        // Peak memory's tooltip says what was measured, in words (not the record's "cpu_peak_rss").
        runs.add(test::synthetic_record("rss", 3, 1, 1));
        RunRecord gpu = test::synthetic_record("gpu", 3, 1, 1);
        gpu.execution.memory_metric = MemoryMetric::CudaPeakAllocated;
        runs.add(gpu);
        RunRecord cpu = test::synthetic_record("cpu", 3, 1, 1);
        cpu.execution.memory_metric = MemoryMetric::CpuPeakRss;
        runs.add(cpu);
        const QString gpuTip = model.data(model.index(3, ComparisonModel::PeakMemory), Qt::ToolTipRole).toString();
        const QString cpuTip = model.data(model.index(4, ComparisonModel::PeakMemory), Qt::ToolTipRole).toString();
        QVERIFY2(gpuTip.contains(QStringLiteral("CUDA caching allocator")) && !gpuTip.contains(QLatin1Char('_')), qPrintable(gpuTip));
        QVERIFY2(cpuTip.contains(QStringLiteral("resident set")) && !cpuTip.contains(QLatin1Char('_')), qPrintable(cpuTip));
    }

    // An emulated run is never the baseline (its time is the emulation's cost): a first run that is one leaves the
    // baseline to the next run, and choosing it is ignored. A run of another model shows "not comparable", why in
    // its tooltip.
    void emulatedRunsAreNoBaselineAndOtherModelsAreNotComparable() {
        RunCollection runs;
        ComparisonModel model(&runs);
        RunRecord emulated = test::synthetic_record("te fp8 cpu", 20, 5, 10);
        emulated.execution.fp8_emulated = true;
        runs.add(emulated);
        QVERIFY(!model.baseline());
        runs.add(test::synthetic_record("torch fp32 cpu", 20, 5, 20));
        const int torch = runs.entries().back().key;
        QCOMPARE(model.baseline(), std::optional<int>(torch));
        QVERIFY(!model.canBeBaseline(runs.entries().front().key));
        model.setBaseline(runs.entries().front().key);
        QCOMPARE(model.baseline(), std::optional<int>(torch));
        RunRecord wider = test::synthetic_record("torch fp32 cpu h1024", 20, 5, 30);
        wider.config.model.hidden = 1024;
        runs.add(wider);
        QCOMPARE(model.data(model.index(2, ComparisonModel::Speedup)).toString(), QStringLiteral("not comparable"));
        const QString tip = model.data(model.index(2, ComparisonModel::Speedup), Qt::ToolTipRole).toString();
        QVERIFY2(tip.contains(QStringLiteral("hidden 1024 vs 768")), qPrintable(tip));
        QCOMPARE(model.data(model.index(2, ComparisonModel::MemoryRatio)).toString(), QStringLiteral("–"));
    }

    // Measurement quality in the table: a "Noise (CV)" column with "noisy" and the reasons in its tooltip; a
    // speedup against or of a noisy run says "noisy"; a record without a quality shows none (not clean).
    void noisyRunsShowTheirNoise() {
        RunCollection runs;
        ComparisonModel model(&runs);
        const auto quality = [](double cv) {
            MeasurementQuality q;
            q.cv = cv;
            q.cores = 4;
            judge_quality(q);
            return q;
        };
        RunRecord base = test::synthetic_record("torch fp32 cpu", 20, 5, 20);
        base.execution.quality = quality(0.01);
        RunRecord noisy = test::synthetic_record("te bf16 cpu", 20, 5, 10);
        noisy.execution.quality = quality(0.2);
        runs.add(base);
        runs.add(noisy);
        runs.add(test::synthetic_record("old run", 20, 5, 10));
        QCOMPARE(model.headerData(ComparisonModel::Noise, Qt::Horizontal).toString(), QStringLiteral("Noise (CV)"));
        QCOMPARE(model.data(model.index(0, ComparisonModel::Noise)).toString(), QStringLiteral("1.0%"));
        QCOMPARE(model.data(model.index(1, ComparisonModel::Noise)).toString(), QStringLiteral("20.0% noisy"));
        QCOMPARE(model.data(model.index(2, ComparisonModel::Noise)).toString(), QStringLiteral("–"));
        const QString tip = model.data(model.index(1, ComparisonModel::Noise), Qt::ToolTipRole).toString();
        QVERIFY2(tip.contains(QStringLiteral("step times vary by 20.0 %")), qPrintable(tip));
        QVERIFY(model.data(model.index(2, ComparisonModel::Noise), Qt::ToolTipRole).toString().contains(QStringLiteral("not known to be clean")));
        QCOMPARE(model.data(model.index(1, ComparisonModel::Speedup)).toString(), QStringLiteral("1.91× noisy"));
        QVERIFY(model.data(model.index(1, ComparisonModel::Speedup), Qt::ToolTipRole).toString().contains(QStringLiteral("Not clean evidence")));
        QCOMPARE(model.data(model.index(2, ComparisonModel::Speedup)).toString(), QStringLiteral("1.91×"));
        QCOMPARE(model.data(model.index(1, ComparisonModel::Noise), ComparisonModel::SortRole).toDouble(), 0.2);
    }

    // "Val loss": the last held-out loss of a run on a token file (its step and the file in the tooltip), "–" for a
    // synthetic run. Hidden by default so that synthetic comparisons keep fitting a 1280-pixel window; shown as soon
    // as a run with a validation loss is in the table, unless the user chose otherwise in the column chooser.
    void valLossColumnShowsTheLastHeldOutLoss() {
        RunCollection runs;
        ComparisonPanel panel(&runs);
        ComparisonModel& model = *panel.model();
        runs.add(test::synthetic_record("synthetic", 20, 5, 20));
        QCOMPARE(model.headerData(ComparisonModel::ValLoss, Qt::Horizontal).toString(), QStringLiteral("Val loss"));
        QVERIFY(!panel.isColumnShown(ComparisonModel::ValLoss));
        QCOMPARE(model.data(model.index(0, ComparisonModel::ValLoss)).toString(), QStringLiteral("–"));
        QVERIFY(model.data(model.index(0, ComparisonModel::ValLoss), ComparisonModel::SortRole).isNull());
        QVERIFY(model.data(model.index(0, ComparisonModel::ValLoss), Qt::ToolTipRole).toString().contains(QStringLiteral("synthetic")));

        RunRecord onFile = test::synthetic_record("on a file", 20, 5, 20);
        onFile.steps[9].val_loss = 3.5;
        onFile.steps[19].val_loss = 2.25;
        onFile.data_file = DataFileInfo{"corpus.txt", 4096, std::string(64, 'a'), TokenFormat::Bytes, 4096, 205, 122};
        runs.add(onFile);
        QVERIFY(panel.isColumnShown(ComparisonModel::ValLoss));
        QCOMPARE(model.data(model.index(1, ComparisonModel::ValLoss)).toString(), QStringLiteral("2.2500"));
        QCOMPARE(model.data(model.index(1, ComparisonModel::ValLoss), ComparisonModel::SortRole).toDouble(), 2.25);
        const QString tip = model.data(model.index(1, ComparisonModel::ValLoss), Qt::ToolTipRole).toString();
        QVERIFY2(tip.contains(QStringLiteral("step 20")) && tip.contains(QStringLiteral("corpus.txt")) &&
                     tip.contains(QStringLiteral("205 held-out tokens")),
                 qPrintable(tip));

        // The user's choice wins over the automatic one, and is kept with the other column choices.
        panel.setColumnShown(ComparisonModel::ValLoss, false);
        onFile.config.name = "another file run";
        runs.add(onFile);
        QVERIFY(!panel.isColumnShown(ComparisonModel::ValLoss));
        QCOMPARE(panel.columnChoices().value(QStringLiteral("Val loss")).toBool(), false);
        // Gone again with the last run that had one (no choice recorded).
        panel.restoreColumnChoices({});
        runs.removeFromView({runs.entries()[1].key, runs.entries()[2].key});
        QVERIFY(!panel.isColumnShown(ComparisonModel::ValLoss));
    }

    void comparisonModelFollowsTheCollection() {
        RunCollection runs;
        ComparisonModel model(&runs);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QVERIFY(!model.baseline());
        const int a = runs.add(test::synthetic_record("slow", 20, 5, 20));  // mean 21 ms
        const int b = runs.add(test::synthetic_record("fast", 20, 5, 10));  // mean 11 ms
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(model.baseline(), a);
        QCOMPARE(model.data(model.index(1, ComparisonModel::Speedup), ComparisonModel::SortRole).toDouble(), 21.0 / 11.0);
        QCOMPARE(model.data(model.index(1, ComparisonModel::Speedup)).toString(), QStringLiteral("1.91×"));
        QCOMPARE(model.data(model.index(0, ComparisonModel::Name)).toString(), QStringLiteral("slow (baseline)"));
        QCOMPARE(model.data(model.index(0, ComparisonModel::Name), Qt::DecorationRole).value<QColor>(),
                 runs.find(a)->colour);
        QSignalSpy baselineChanged(&model, &ComparisonModel::baselineChanged);
        model.setBaseline(b);
        QCOMPARE(baselineChanged.count(), 1);
        QCOMPARE(model.data(model.index(0, ComparisonModel::Speedup), ComparisonModel::SortRole).toDouble(), 11.0 / 21.0);
        QCOMPARE(model.baselineIndex(), std::size_t{1});

        // A live run's summary comes from the steps so far.
        RunRecord live = test::synthetic_record("live", 0, 0, 0);
        live.status = RunStatus::Running;
        live.config.warmup = 1;
        live.config.iters = 10;
        const int c = runs.add(live);
        QVERIFY(model.data(model.index(2, ComparisonModel::MeanMs), ComparisonModel::SortRole).isNull());
        StepMetrics step;
        step.step = 1;
        step.phase = Phase::Warmup;
        step.step_ms = 100;
        runs.appendStep(c, step);
        step.step = 2;
        step.phase = Phase::Timed;
        step.step_ms = 5.5;
        step.loss = 3;
        runs.appendStep(c, step);
        // A running run's row follows within one live-update interval, not per step.
        QTRY_COMPARE(model.data(model.index(2, ComparisonModel::MeanMs), ComparisonModel::SortRole).toDouble(), 5.5);
        QCOMPARE(model.data(model.index(2, ComparisonModel::FinalLoss)).toString(), QStringLiteral("3.0000"));

        runs.remove(b);  // the baseline leaves: the first run becomes the baseline
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(model.baseline(), a);
        QCOMPARE(model.summarizedRecords().size(), std::size_t{2});
        runs.clear();
        QCOMPARE(model.rowCount(), 0);
        QVERIFY(!model.baseline());
    }

    // The comparison view's stacked bars: one per run, top to bottom in the table's order, each segment the
    // summary's mean ms; a live run's bar follows its steps; a run without a breakdown says so.
    void breakdownBarsFollowTheRuns() {
        RunCollection runs;
        ComparisonPanel panel(&runs);
        RunRecord eager = test::synthetic_record("te bf16", 20, 5, 20);
        eager.summary.breakdown = StepBreakdown{6, 11, 3, 0};
        eager.summary.breakdown_source = "timed steps";
        RunRecord fp8 = test::synthetic_record("te fp8", 20, 5, 10);
        fp8.summary.breakdown = StepBreakdown{3, 5, 1.5, 0.5};
        runs.add(eager);
        runs.add(fp8);
        runs.add(test::synthetic_record("old record", 20, 5, 30));
        TimeBreakdownChart* chart = panel.breakdown();
        QTRY_COMPARE(chart->labels().size(), 3);
        QCOMPARE(chart->labels()[0], QStringLiteral("te bf16"));
        QCOMPARE(chart->labels()[2], QStringLiteral("old record (no breakdown)"));
        QCOMPARE(chart->values(StepSegment::Backward), (std::vector<double>{11, 5, 0}));
        QCOMPARE(chart->values(StepSegment::Fp8), (std::vector<double>{0, 0.5, 0}));

        RunRecord live = test::synthetic_record("live", 0, 0, 0);
        live.status = RunStatus::Running;
        live.config.warmup = 0;
        live.config.iters = 10;
        const int key = runs.add(live);
        StepMetrics step;
        step.step = 1;
        step.phase = Phase::Timed;
        step.step_ms = 4;
        step.breakdown = StepBreakdown{1, 2, 0.75, 0.25};
        runs.appendStep(key, step);
        QTRY_COMPARE(chart->values(StepSegment::Optimizer).size(), std::size_t{4});
        QTRY_COMPARE(chart->values(StepSegment::Optimizer)[3], 0.75);
        panel.setDark(true);
        QCOMPARE(chart->labels().size(), 4);
        runs.clear();
        QTRY_COMPARE(chart->labels().size(), 0);
    }

    void historyModelAndItsFilter() {
        HistoryModel model;
        QSortFilterProxyModel proxy;
        proxy.setSourceModel(&model);
        proxy.setFilterKeyColumn(-1);
        proxy.setFilterCaseSensitivity(Qt::CaseInsensitive);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester proxyTester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
        StoredRun one;
        one.id = 1;
        one.name = "torch fp32 cpu";
        one.backend = "torch";
        one.precision = "fp32";
        one.status = "finished";
        one.median_ms = 12.345;
        StoredRun two = one;
        two.id = 2;
        two.name = "te fp8 cpu";
        two.backend = "te";
        two.precision = "fp8";
        two.fp8_emulated = true;
        model.setRuns({two, one});
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(model.data(model.index(0, HistoryModel::Precision)).toString(), QStringLiteral("fp8 (emulated)"));
        QCOMPARE(model.data(model.index(1, HistoryModel::MedianMs)).toString(), QStringLiteral("12.35"));
        QCOMPARE(model.data(model.index(1, HistoryModel::Id), HistoryModel::StoreIdRole).toLongLong(), 1);
        proxy.setFilterFixedString(QStringLiteral("FP8"));
        QCOMPARE(proxy.rowCount(), 1);
        proxy.setFilterFixedString(QString());
        model.setRuns({});
        QCOMPARE(proxy.rowCount(), 0);
    }

    // A data-parallel job goes through core's run_data_parallel_job, as te-bench's does: its 1-process run is
    // trained with the worker's own train function (named after the job) and reported as it ends; a cancel
    // during it starts no rank and ends the job cancelled. A te-bench that is not there refuses the job
    // before anything runs.
    void workerJobGoesThroughCore() {
        qRegisterMetaType<tewb::RunRecord>();
        RunConfig config = make_preset(Preset::QuickCpu);
        config.dist.nproc = 2;
        config.name = "worker job";
        DeviceInfo cpu;
        cpu.gpu_error = "no CUDA-capable device is detected";
        std::vector<std::string> trained;
        RunWorker* self = nullptr;
        const RunWorker::TrainFunction train = [&](const ResolvedRun& resolved_run, const TrainerCallbacks&, const std::atomic<bool>* cancel) {
            const RunConfig& c = resolved_run.config;
            trained.push_back(c.name);
            self->cancel();  // Cancel, pressed during the reference run
            RunRecord record;
            record.config = c;
            record.status = cancel->load() ? RunStatus::Cancelled : RunStatus::Finished;
            return record;
        };
        {
            RunWorker worker(cpu, train, QStringLiteral("/bin/false"));  // would fail the job, were a rank started
            self = &worker;
            QSignalSpy extra(&worker, &RunWorker::extraRunEnded);
            QSignalSpy ended(&worker, &RunWorker::runEnded);
            QSignalSpy refused(&worker, &RunWorker::runRefused);
            worker.runOne(7, resolve_run(config, cpu));
            QCOMPARE(trained, std::vector<std::string>{"worker job (1 process)"});
            QCOMPARE(extra.count(), 1);
            QCOMPARE(extra.front().at(0).value<RunRecord>().status, RunStatus::Cancelled);
            QCOMPARE(refused.count(), 0);
            QCOMPARE(ended.count(), 1);
            QCOMPARE(ended.front().at(0).toInt(), 7);
            const RunRecord job = ended.front().at(1).value<RunRecord>();
            QCOMPARE(job.status, RunStatus::Cancelled);
            QCOMPARE(job.config.name, std::string("worker job"));
            QCOMPARE(job.config.dist.nproc, 2);
        }
        trained.clear();
        RunWorker missing(cpu, train, QStringLiteral("/nonexistent/te-bench"));
        self = &missing;
        QSignalSpy refused(&missing, &RunWorker::runRefused);
        missing.runOne(8, resolve_run(config, cpu));
        QCOMPARE(refused.count(), 1);
        QVERIFY2(refused.front().at(1).toString().contains(
                     QStringLiteral("cannot start /nonexistent/te-bench for the data-parallel job")),
                 qPrintable(refused.front().at(1).toString()));
        QVERIFY(trained.empty());
    }

    // Twenty runs shown at once get twenty different (colour, line style) pairs, the same pair wherever the run
    // is drawn; the colours stay apart (CIELAB distance) and legible on the light and the dark chart background.
    // A run added after one was removed takes a pair no shown run has.
    void twentyRunsAreToldApart() {
        RunCollection runs;
        for (int i = 0; i < kDistinctRunStyles; ++i) runs.add(test::synthetic_record("run " + std::to_string(i), 3, 1, 1));
        std::set<std::pair<QRgb, int>> pairs;
        for (std::size_t i = 0; i < runs.entries().size(); ++i) {
            const QColor colour = runs.entries()[i].colour;
            QCOMPARE(colour, run_style(static_cast<int>(i)).colour);
            QCOMPARE(run_line_style(colour), run_style(static_cast<int>(i)).line);
            pairs.insert({colour.rgb(), static_cast<int>(run_line_style(colour))});
        }
        QCOMPARE(pairs.size(), std::size_t{20});
        QCOMPARE(run_line_style(runs.entries()[0].colour), Qt::SolidLine);
        QCOMPARE(run_line_style(runs.entries()[10].colour), Qt::DashDotLine);  // not dashed: warm-up steps are
        for (int a = 0; a < kDistinctRunStyles; ++a) {
            // Tableau 10's yellow sets the floor on white; on the dark plot every colour does better.
            QVERIFY2(contrast(run_colour(a), chart_colours(false).plot_background) >= 1.5, qPrintable(run_colour(a).name()));
            QVERIFY2(contrast(run_colour(a), chart_colours(true).plot_background) >= 2.5, qPrintable(run_colour(a).name()));
            for (int b = a + 1; b < kDistinctRunStyles; ++b) {
                QVERIFY2(lab_distance(run_colour(a), run_colour(b)) > 15,
                         qPrintable(run_colour(a).name() + QLatin1Char(' ') + run_colour(b).name()));
            }
        }
        const QColor third = runs.entries()[3].colour;
        runs.remove(runs.entries()[3].key);
        const int again = runs.add(test::synthetic_record("again", 3, 1, 1));
        QCOMPARE(runs.find(again)->colour, third);  // the one pair free
        pairs.clear();
        for (const RunCollection::Entry& e : runs.entries()) pairs.insert({e.colour.rgb(), static_cast<int>(run_line_style(e.colour))});
        QCOMPARE(pairs.size(), std::size_t{20});
    }

    // Several runs leave the view at once, a live one stays; "Remove all" goes ahead at once when every run is
    // in the store, and asks first when one is not (it could not be opened again from the history).
    void removingSeveralAndAll() {
        RunCollection runs;
        const int a = runs.add(test::synthetic_record("a", 3, 1, 1), 1);
        const int b = runs.add(test::synthetic_record("b", 3, 1, 1), 2);
        RunRecord live = test::synthetic_record("live", 3, 1, 1);
        live.status = RunStatus::Running;
        const int c = runs.add(live);
        const int d = runs.add(test::synthetic_record("d", 3, 1, 1), 4);
        QString message = remove_runs_from_view(runs, {a, b, c});
        QCOMPARE(runs.keys(), (std::vector<int>{c, d}));
        QVERIFY2(message.contains(QStringLiteral("Removed 2 runs")) && message.contains(QStringLiteral("stay in the history")) &&
                     message.contains(QStringLiteral("1 running run stays")),
                 qPrintable(message));

        QWidget parent;
        QStringList done;
        const auto note = [&](const QString& text) { done << text; };
        remove_all_runs_from_view(&parent, &runs, note);
        QCOMPARE(runs.keys(), std::vector<int>{c});  // every stopped run was stored: no question
        QCOMPARE(done.size(), 1);
        QVERIFY(!parent.findChild<QMessageBox*>(QStringLiteral("removeAllRunsBox")));

        runs.add(test::synthetic_record("from a file", 3, 1, 1));  // no store id
        remove_all_runs_from_view(&parent, &runs, note);
        auto* box = parent.findChild<QMessageBox*>(QStringLiteral("removeAllRunsBox"));
        QVERIFY(box);
        QVERIFY2(box->text().contains(QStringLiteral("not in the run store")), qPrintable(box->text()));
        QCOMPARE(runs.entries().size(), std::size_t{2});  // nothing removed before the answer
        box->button(QMessageBox::Yes)->click();
        QCOMPARE(runs.keys(), std::vector<int>{c});
        QCOMPARE(done.size(), 2);
        QVERIFY2(done.back().contains(QStringLiteral("Removed 1 run")), qPrintable(done.back()));
    }

    // The history's first order is the one its header shows (newest first); clicking a column sorts by its
    // values (numbers as numbers) and the indicator follows, a second click reverses both.
    void historySortIndicatorMatchesOrder() {
        QTemporaryDir dir;
        HistoryPanel panel(dir.filePath(QStringLiteral("runs.sqlite3")).toStdString());
        std::vector<StoredRun> stored;
        for (const auto& [id, median] : std::vector<std::pair<int, double>>{{3, 100.25}, {2, 9.5}, {1, 12.0}}) {
            StoredRun r;
            r.id = id;
            r.name = "run " + std::to_string(id);
            r.median_ms = median;
            r.peak_mem_bytes = static_cast<std::uint64_t>(id) << (id == 2 ? 30 : 20);  // 1 MiB, 2 GiB, 3 MiB
            stored.push_back(r);
        }
        panel.model()->setRuns(stored);
        panel.resize(900, 400);
        panel.show();
        QHeaderView* header = panel.view()->horizontalHeader();
        const auto column = [&](int c) {
            QStringList values;
            for (int row = 0; row < panel.filtered()->rowCount(); ++row) values << panel.filtered()->index(row, c).data().toString();
            return values;
        };
        QCOMPARE(header->sortIndicatorSection(), int(HistoryModel::Id));
        QCOMPARE(header->sortIndicatorOrder(), Qt::DescendingOrder);
        QCOMPARE(column(HistoryModel::Id), (QStringList{"3", "2", "1"}));
        const auto click = [&](int section) {
            QTest::mouseClick(header->viewport(), Qt::LeftButton, {},
                              QPoint(header->sectionViewportPosition(section) + header->sectionSize(section) / 2, header->height() / 2));
        };
        click(HistoryModel::MedianMs);
        QCOMPARE(header->sortIndicatorSection(), int(HistoryModel::MedianMs));
        const Qt::SortOrder first = header->sortIndicatorOrder();
        const QStringList ascending{"9.50", "12.00", "100.25"};
        const QStringList descending{"100.25", "12.00", "9.50"};
        QCOMPARE(column(HistoryModel::MedianMs), first == Qt::AscendingOrder ? ascending : descending);
        click(HistoryModel::MedianMs);
        QVERIFY(header->sortIndicatorOrder() != first);
        QCOMPARE(column(HistoryModel::MedianMs), first == Qt::AscendingOrder ? descending : ascending);
        header->setSortIndicator(HistoryModel::PeakMemory, Qt::AscendingOrder);
        QCOMPARE(column(HistoryModel::Id), (QStringList{"1", "3", "2"}));  // 1 MiB, 3 MiB, 2 GiB

        // Long names give up width, elided in the middle with the full name in the tooltip: no sideways scrolling.
        std::vector<StoredRun> longer = stored;
        for (StoredRun& r : longer) r.name = "a run name far longer than a history pane at 1280 pixels can show " + r.name;
        panel.model()->setRuns(longer);
        panel.resize(820, 400);  // about the history tab's width in a 1280-pixel window
        QTest::qWait(50);
        int widths = 0;
        for (int c = 0; c < HistoryModel::ColumnCount; ++c) widths += panel.view()->isColumnHidden(c) ? 0 : panel.view()->columnWidth(c);
        QVERIFY2(!panel.view()->horizontalScrollBar()->isVisible(),
                 qPrintable(QStringLiteral("columns %1 px, viewport %2 px").arg(widths).arg(panel.view()->viewport()->width())));
        QCOMPARE(panel.view()->textElideMode(), Qt::ElideMiddle);
        QVERIFY(panel.filtered()->index(0, HistoryModel::Name).data(Qt::ToolTipRole).toString().startsWith(QStringLiteral("a run name far")));
        QVERIFY(!panel.view()->isColumnHidden(HistoryModel::MedianMs) && !panel.view()->isColumnHidden(HistoryModel::Status));
        panel.resize(1600, 400);  // room again: every column back
        QTest::qWait(50);
        for (int c = 0; c < HistoryModel::ColumnCount; ++c) QVERIFY(!panel.view()->isColumnHidden(c));
        panel.model()->setRuns(stored);

        // Deleting asks first, and Enter answers No: the runs cannot be brought back.
        panel.view()->selectRow(0);
        panel.confirmAndRemove();
        auto* box = panel.findChild<QMessageBox*>(QStringLiteral("deleteRunsBox"));
        QVERIFY(box != nullptr);
        QCOMPARE(box->standardButton(box->defaultButton()), QMessageBox::No);
        box->reject();
    }

    // Opening runs picks the baseline a user expects: a torch run, never an emulated FP8 one; without a
    // torch run the first run that is not emulated. A baseline the user chose among older runs stays.
    void openingRunsPicksASensibleBaseline() {
        const RunRecord torch = test::synthetic_record_of("torch bf16", Backend::Torch, Precision::Bf16, false, 10, 2, 10);
        const RunRecord emulated = test::synthetic_record_of("te fp8", Backend::Te, Precision::Fp8, true, 10, 2, 8);
        const RunRecord te = test::synthetic_record_of("te bf16", Backend::Te, Precision::Bf16, false, 10, 2, 9);
        {
            RunCollection runs;
            ComparisonModel model(&runs);
            runs.add(emulated, 1);
            runs.add(te, 2);
            const int torchKey = runs.add(torch, 3);
            QCOMPARE(model.baseline(), runs.entries()[1].key);  // the table took the first to arrive that can be one
            QCOMPARE(runs.baselineAfterOpening(model.baseline(), 3), torchKey);
        }
        {
            RunCollection runs;
            ComparisonModel model(&runs);
            runs.add(emulated, 1);
            const int teKey = runs.add(te, 2);
            QCOMPARE(model.baseline(), std::optional<int>(teKey));  // not the emulated run that came first
            QCOMPARE(runs.baselineAfterOpening(model.baseline(), 2), std::nullopt);  // already the sensible one
            model.setBaseline(teKey);
            runs.add(torch, 3);  // opened later: the user's baseline among the older runs stays
            QCOMPARE(runs.baselineAfterOpening(model.baseline(), 1), std::nullopt);
        }
        {
            RunCollection runs;
            const int only = runs.add(emulated, 1);
            QCOMPARE(runs.baselineAfterOpening(only, 1), std::nullopt);  // nothing better: no change
            QCOMPARE(runs.sensibleBaseline(runs.keys()), std::nullopt);
        }
    }

    // Every file dialog starts in the last folder chosen; with settings attached it is written there and the
    // next session reads it back (settings of the test's own, never the user's); a folder that is gone falls
    // back to the home folder.
    void fileDialogsStartInTheLastFolder() {
        QTemporaryDir dir;
        QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("results")));
        const QString results = QDir(dir.path()).filePath(QStringLiteral("results"));
        const QString ini = dir.filePath(QStringLiteral("settings.ini"));
        {
            QSettings settings(ini, QSettings::IniFormat);
            RememberedFolder::attach(&settings);
            RememberedFolder::rememberFile(QDir(results).filePath(QStringLiteral("comparison.csv")));
            QCOMPARE(RememberedFolder::folder(), results);
            QCOMPARE(settings.value(QStringLiteral("files/lastFolder")).toString(), results);
        }
        RememberedFolder::rememberFolder(dir.path());  // the settings are gone: kept for the process only
        QCOMPARE(RememberedFolder::folder(), QDir::cleanPath(dir.path()));
        {
            QSettings next(ini, QSettings::IniFormat);
            RememberedFolder::attach(&next);  // a new session
            QCOMPARE(RememberedFolder::folder(), results);
            QCOMPARE(RememberedFolder::suggest(QStringLiteral("sweep.png")), QDir(results).filePath(QStringLiteral("sweep.png")));

            // The dialog opens there, and what is chosen in it is remembered.
            QString startedIn;
            QTimer driver;
            connect(&driver, &QTimer::timeout, this, [&] {
                auto* dialog = qobject_cast<QFileDialog*>(QApplication::activeModalWidget());
                if (!dialog) return;
                startedIn = dialog->directory().absolutePath();
                auto* name = dialog->findChild<QLineEdit*>(QStringLiteral("fileNameEdit"));  // typed, as a user would
                QVERIFY(name);
                name->setText(dir.filePath(QStringLiteral("elsewhere.csv")));
                QMetaObject::invokeMethod(dialog, "accept");  // a slot; protected as a function
            });
            driver.start(20);
            const QString chosen = choose_save_file(nullptr, QStringLiteral("Export"), QStringLiteral("x.csv"), QStringLiteral("CSV (*.csv)"));
            driver.stop();
            QCOMPARE(startedIn, results);
            QCOMPARE(chosen, dir.filePath(QStringLiteral("elsewhere.csv")));
            QCOMPARE(RememberedFolder::folder(), QDir::cleanPath(dir.path()));
            QCOMPARE(next.value(QStringLiteral("files/lastFolder")).toString(), QDir::cleanPath(dir.path()));
            QVERIFY(QDir(results).removeRecursively());
            RememberedFolder::rememberFolder(results);  // gone by now
            QCOMPARE(RememberedFolder::folder(), QDir::homePath());
            RememberedFolder::attach(nullptr);
        }
    }

    // An export says where it wrote, in the status bar for a while and in a label that keeps it; a failure
    // says what was not saved and why.
    // Every export of the window goes through write_file_atomically: a token file that a run in the window or in
    // the queue trained on (or will) is refused there, however the dialog's path reaches it (before: a CSV or
    // PNG export could replace the corpus).
    void exportsNeverWriteOverTrainingData() {
        QTemporaryDir dir;
        const QString window_data = dir.filePath("shown.txt");
        const QString queued_data = dir.filePath("queued.txt");
        for (const QString& path : {window_data, queued_data}) {
            QFile file(path);
            QVERIFY(file.open(QIODevice::WriteOnly));
            file.write("the corpus");
        }
        RunCollection runs;
        RunRecord shown;
        shown.config.data.path = window_data.toStdString();
        runs.add(shown);
        RunQueueModel queue;
        RunConfig queued;
        queued.data.path = queued_data.toStdString();
        queue.append(queued, RunQueueModel::State::Queued, {}, std::nullopt, false, {});
        const QString link = dir.filePath("link.csv");
        QVERIFY(QFile::link(queued_data, link));
        for (const QString& target : {window_data, queued_data, link}) {
            try {
                write_file_atomically(target.toStdString(), "step,loss\n");
                QFAIL(qPrintable(target));
            } catch (const DataError& e) {
                QVERIFY2(std::string(e.what()).find("is the training data of a run (") != std::string::npos, e.what());
            }
        }
        for (const QString& path : {window_data, queued_data}) {
            QFile file(path);
            QVERIFY(file.open(QIODevice::ReadOnly));
            QCOMPARE(file.readAll(), QByteArray("the corpus"));
        }
    }

    void exportsConfirmWhereTheyWrote() {
        QMainWindow window;
        auto* notice = new SaveNotice(window.statusBar());
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("comparison.csv"));
        notice->saved(path);
        const QString expected = QStringLiteral("Saved comparison.csv to %1").arg(QDir::toNativeSeparators(dir.path()));
        QCOMPARE(window.statusBar()->currentMessage(), expected);
        QCOMPARE(notice->text(), expected);
        window.statusBar()->showMessage(QStringLiteral("Running torch fp32: step 3 of 40"));  // the next message
        QCOMPARE(notice->text(), expected);  // still there to be found
        QCOMPARE(notice->message(), expected);
        notice->failed(QStringLiteral("/nonexistent/dashboard.png"), QStringLiteral("/nonexistent: No such file or directory"));
        QCOMPARE(notice->text(), QStringLiteral("Not saved: dashboard.png"));
        QVERIFY2(window.statusBar()->currentMessage().contains(QStringLiteral("No such file or directory")),
                 qPrintable(window.statusBar()->currentMessage()));
        QVERIFY(notice->toolTip().contains(QStringLiteral("No such file")));
        // A deep folder is elided in the label, so it never widens the status bar; the tooltip has all of it.
        notice->saved(QStringLiteral("/") + QStringLiteral("very-long-folder-name/").repeated(30) + QStringLiteral("steps.csv"));
        QVERIFY(notice->sizeHint().width() <= SaveNotice::kMaxWidth + 20);
        QVERIFY(notice->toolTip().endsWith(QStringLiteral("very-long-folder-name")));
    }

    // A sweep's runs go to the Sweep tab's collection, named after their sweep, not to the dashboard's charts
    // and table; "Show sweep runs on the dashboard" mirrors them there (following a live run) and takes them
    // away again.
    void sweepRunsStayOffTheDashboardUntilAsked() {
        RunCollection dashboard;
        ComparisonModel table(&dashboard);
        RunController controller(&dashboard);
        controller.setDevice(test::no_gpu(), [](const ResolvedRun& resolved_run, const TrainerCallbacks& callbacks, const std::atomic<bool>*) {
            const RunConfig& c = resolved_run.config;
            RunRecord r = test::synthetic_record(c.name, c.total_steps(), c.warmup, 5);
            r.config = c;
            RunRecord header = r;
            header.status = RunStatus::Running;
            header.steps.clear();
            if (callbacks.on_start) callbacks.on_start(header);
            for (const StepMetrics& s : r.steps) {
                if (callbacks.on_step) callbacks.on_step(s);
            }
            return r;
        });
        RunConfig config = make_preset(Preset::QuickCpu);
        config.iters = 3;
        config.warmup = 1;
        config.name = "sweep h64 fp32";
        QVERIFY(!controller.enqueue(config, 1, QStringLiteral("Sweep 1")));
        config.name = "plain run";
        QVERIFY(!controller.enqueue(config));
        QCOMPARE(controller.queue()->data(controller.queue()->index(0, RunQueueModel::Name)).toString(),
                 QStringLiteral("Sweep 1 · sweep h64 fp32"));
        QSignalSpy drained(&controller, &RunController::queueDrained);
        controller.start();
        QVERIFY(drained.wait(30'000));
        RunCollection* sweepRuns = controller.sweepRuns();
        QCOMPARE(sweepRuns->entries().size(), std::size_t{1});
        QCOMPARE(sweepRuns->entries().front().sweep, QStringLiteral("Sweep 1"));
        QCOMPARE(sweepRuns->entries().front().record.steps.size(), std::size_t{4});
        QCOMPARE(table.rowCount(), 1);  // the plain run only
        QCOMPARE(dashboard.entries().front().record.config.name, std::string("plain run"));

        RunMirror mirror(sweepRuns, &dashboard);
        mirror.setEnabled(true);
        QCOMPARE(table.rowCount(), 2);
        const int copy = mirror.copyOf(sweepRuns->entries().front().key);
        QCOMPARE(dashboard.find(copy)->record.config.name, std::string("sweep h64 fp32"));
        QCOMPARE(dashboard.find(copy)->sweep, QStringLiteral("Sweep 1"));
        // A live sweep run shown there follows step by step.
        RunRecord live = test::synthetic_record("sweep h128 fp32", 0, 0, 0);
        live.status = RunStatus::Running;
        const int liveKey = sweepRuns->add(live, std::nullopt, QStringLiteral("Sweep 1"));
        StepMetrics step;
        step.step = 1;
        step.step_ms = 7;
        sweepRuns->appendStep(liveKey, step);
        QCOMPARE(dashboard.find(mirror.copyOf(liveKey))->record.steps.size(), std::size_t{1});
        RunRecord ended = sweepRuns->find(liveKey)->record;
        ended.status = RunStatus::Finished;
        sweepRuns->finish(liveKey, ended, 9);
        QCOMPARE(dashboard.find(mirror.copyOf(liveKey))->store_id, std::optional<std::int64_t>(9));
        mirror.setEnabled(false);
        QCOMPARE(table.rowCount(), 1);
        QCOMPARE(sweepRuns->entries().size(), std::size_t{2});  // the Sweep tab keeps them
    }

    void coloursAreStablePerRun() {
        RunCollection runs;
        const int a = runs.add(test::synthetic_record("a", 3, 1, 1));
        const int b = runs.add(test::synthetic_record("b", 3, 1, 1));
        const QColor colourB = runs.find(b)->colour;
        runs.remove(a);
        const int c = runs.add(test::synthetic_record("c", 3, 1, 1));
        QCOMPARE(runs.find(b)->colour, colourB);  // removing a run does not recolour the others
        QVERIFY(runs.find(c)->colour != colourB);
        QCOMPARE(runs.find(c)->colour, run_colour(0));  // the first colour no shown run has
        // Runs opened after the view was cleared start with the palette's first colours again, not its brown and grey.
        for (int i = 0; i < 8; ++i) runs.add(test::synthetic_record("more", 3, 1, 1));
        runs.clear();
        const int reopened = runs.add(test::synthetic_record("reopened", 3, 1, 1));
        const int second = runs.add(test::synthetic_record("reopened 2", 3, 1, 1));
        QCOMPARE(runs.find(reopened)->colour, run_colour(0));
        QCOMPARE(runs.find(second)->colour, run_colour(1));
    }
};

QTEST_MAIN(TestUiModels)
#include "tst_ui_models.moc"

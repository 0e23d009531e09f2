#include <QtTest>

#include <QAbstractItemModelTester>
#include <QSortFilterProxyModel>

#include "UiTestSupport.h"
#include "ui/history/HistoryModel.h"
#include "ui/runs/RunCollection.h"
#include "ui/runs/RunController.h"
#include "ui/runs/RunQueueModel.h"
#include "ui/runs/RunWorker.h"
#include "ui/charts/TimeBreakdownChart.h"
#include "ui/table/ComparisonModel.h"
#include "ui/table/ComparisonPanel.h"

using namespace tewb;
using namespace tewb::ui;

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
        const RunWorker::TrainFunction train = [&](const RunConfig& c, const TrainerCallbacks&, const std::atomic<bool>* cancel) {
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
            worker.runOne(7, config);
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
        missing.runOne(8, config);
        QCOMPARE(refused.count(), 1);
        QVERIFY2(refused.front().at(1).toString().contains(
                     QStringLiteral("cannot start /nonexistent/te-bench for the data-parallel job")),
                 qPrintable(refused.front().at(1).toString()));
        QVERIFY(trained.empty());
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
    }
};

QTEST_MAIN(TestUiModels)
#include "tst_ui_models.moc"

// The workbench end to end on the CPU: runs driven through the window, cancel, close during a run, a
// failed run, exports, opening records, responsiveness.
#include <QtTest>

#include <csignal>
#include <filesystem>

#include <sqlite3.h>

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QAbstractSpinBox>
#include <QComboBox>
#include <QSettings>
#include <QDir>
#include <QFileDialog>
#include <QMenu>
#include <QStatusBar>
#include <QHeaderView>
#include <QScrollBar>
#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QLineEdit>
#include <QLineSeries>
#include <QMessageBox>
#include <QMutex>
#include <QPushButton>
#include <QSet>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QTableView>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QThread>
#include <QTimer>

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "WindowTestSupport.h"
#include "core/device/Capability.h"
#include "core/results/RecordJson.h"
#include "core/results/RunStore.h"
#include "core/train/Trainer.h"
#include "ui/charts/ChartsPanel.h"
#include "ui/charts/Fp8Inspector.h"
#include "ui/charts/Fp8Panel.h"
#include "ui/charts/TopKernelsPanel.h"
#include "ui/common/RememberedFolder.h"
#include "ui/common/Theme.h"
#include "ui/export/SaveNotice.h"
#include "ui/history/HistoryModel.h"
#include "ui/history/HistoryPanel.h"
#include "ui/runs/RunQueueModel.h"
#include "ui/runs/RunWorker.h"
#include "ui/runs/RunCollection.h"
#include "ui/runs/RunController.h"
#include "ui/runs/RunQueuePanel.h"
#include "ui/setup/RunSetupPanel.h"
#include "ui/sweep/SweepPanel.h"
#include "ui/table/ComparisonModel.h"
#include "ui/table/ComparisonPanel.h"
#include "ui/window/MainWindow.h"
#include "ui/window/WindowFit.h"

using namespace tewb;
using namespace tewb::ui;

namespace {

constexpr int kRunTimeoutMs = 120'000;

using test::make_window;

void queue_quick_run(MainWindow& window, int iters = 55, const QString& name = {}) {
    RunSetupPanel* setup = window.setupPanel();
    setup->applyPreset(Preset::QuickCpu);
    qobject_cast<QSpinBox*>(setup->field("iters"))->setValue(iters);
    if (!name.isEmpty()) qobject_cast<QLineEdit*>(setup->field("name"))->setText(name);
    QVERIFY(setup->addButton()->isEnabled());
    setup->addButton()->click();
}

// The comparison plan's five runs and an inspected FP8 run with a model's worth of cast slots, each with a
// time breakdown, as a window holds them after `--demo compare` and an inspected run.
std::vector<RunRecord> window_fixture() {
    std::vector<RunRecord> records;
    double ms = 10;
    for (const char* name : {"torch fp32 cpu (baseline)", "torch bf16 cpu", "te fp32 cpu", "te bf16 cpu", "te fp8 cpu"}) {
        records.push_back(test::synthetic_record(name, 40, 10, ms));
        ms += 1.5;
    }
    RunRecord inspected = test::synthetic_record("te fp8 cpu inspected casts", 40, 10, 20);
    inspected.config.backend = Backend::Te;
    inspected.config.precision = Precision::Fp8;
    inspected.config.inspect_fp8 = true;
    inspected.execution.fp8_emulated = true;
    for (int layer = 0; layer < 4; ++layer) {
        for (const char* module : {"attn.qkv", "attn.proj", "mlp.fc1", "mlp.fc2"}) {
            for (const SlotRole role : {SlotRole::Input, SlotRole::Weight, SlotRole::GradOutput}) {
                inspected.fp8_slots.push_back({"blocks_" + std::to_string(layer) + "." + module, role,
                                               role == SlotRole::GradOutput ? Fp8Dtype::E5M2 : Fp8Dtype::E4M3});
            }
        }
    }
    records.push_back(inspected);
    for (RunRecord& r : records) {
        for (StepMetrics& step : r.steps) {
            step.breakdown = StepBreakdown{step.step_ms * 0.3, step.step_ms * 0.5, step.step_ms * 0.15, step.step_ms * 0.05, 0};
            const float k = static_cast<float>(step.step);
            step.fp8.assign(r.fp8_slots.size(), Fp8SlotSample{2.0f * k, 100.0f, 0.001f, 0.0f, 1e-3f / k, 1e-3f, 1e-5f});
        }
        r.summary.breakdown = r.steps.back().breakdown;
        r.summary.breakdown_source = "timed steps";
    }
    return records;
}

// Every tab of both tab widgets shown once, with time for the charts to draw what they hold.
void visit_every_tab(MainWindow& window) {
    for (QTabWidget* tabs : window.findChildren<QTabWidget*>()) {
        for (int i = 0; i < tabs->count(); ++i) {
            tabs->setCurrentIndex(i);
            QTest::qWait(30);
        }
    }
    window.charts()->markDirty();
    window.charts()->refreshIfDirty();
    window.fp8Panel()->markDirty();
    window.fp8Panel()->refreshIfDirty();
    QTest::qWait(300);  // the breakdown and the tables follow on their timers
}

int store_count() {
    RunStore store(RunStore::default_path());
    return static_cast<int>(store.list().size());
}

// A trainer for the sweep: finished at once, the step time growing with the hidden size.
RunRecord fake_sweep_train(const ResolvedRun& resolved_run, const TrainerCallbacks&, const std::atomic<bool>*) {
    const RunConfig& config = resolved_run.config;
    const double ms = config.model.hidden / 16.0 + (config.precision == Precision::Fp32 ? 2.0 : 1.0);
    RunRecord r = test::synthetic_record(config.name, config.total_steps(), config.warmup, ms);
    r.config = config;
    r.execution.device = "cpu";
    return r;
}

// The window's menu action whose text (without its & mnemonic) starts with `text`.
QAction* menu_action(const MainWindow& window, const QString& text) {
    for (QAction* action : window.findChildren<QAction*>()) {
        if (action->text().remove(QLatin1Char('&')).startsWith(text)) return action;
    }
    qFatal("no action %s", qPrintable(text));
}

}  // namespace

class TestWorkbench : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void quickRunThroughTheWindowStaysResponsive() {
        // Core's trainer, with each step's thread noted on the way.
        const Trainer trainer(test::no_gpu());
        QMutex threadsLock;
        QSet<QThread*> stepThreads;
        auto window = make_window([&](const ResolvedRun& resolved_run, const TrainerCallbacks& callbacks, const std::atomic<bool>* cancel) {
            const RunConfig& config = resolved_run.config;
            TrainerCallbacks noting = callbacks;
            noting.on_step = [&, forward = callbacks.on_step](const StepMetrics& step) {
                {
                    const QMutexLocker locker(&threadsLock);
                    stepThreads.insert(QThread::currentThread());
                }
                forward(step);
            };
            return trainer.run(config, noting, cancel);
        });
        QVERIFY(window->device());
        const int storedBefore = store_count();
        queue_quick_run(*window);
        QCOMPARE(window->controller()->queue()->rowCount(), 1);

        // The probe: a 10 ms timer on the GUI thread; the longest gap between its ticks is the longest
        // event-loop stall while the run streams steps and the charts redraw.
        QElapsedTimer clock;
        qint64 last = 0;
        qint64 worst = 0;
        QTimer probe;
        probe.setInterval(10);
        QObject::connect(&probe, &QTimer::timeout, [&] {
            const qint64 now = clock.elapsed();
            if (now - last > 30) {
                qInfo("stall %lld ms at %lld ms, steps %zu, refreshes %d", static_cast<long long>(now - last),
                      static_cast<long long>(now), window->runs()->empty() ? 0 : window->runs()->entries().front().record.steps.size(),
                      window->charts()->refreshCount());
            }
            worst = std::max(worst, now - last);
            last = now;
        });
        QSignalSpy drained(window->controller(), &RunController::queueDrained);
        clock.start();
        probe.start();
        window->queuePanel()->startButton()->click();
        QVERIFY(window->controller()->isRunning());
        QVERIFY(drained.wait(kRunTimeoutMs));
        probe.stop();
        // A figure, not an assertion: how long the event loop stalls depends on the machine and what else it
        // runs (89 ms was seen with both cores busy). What the design promises (training on the run thread,
        // never on the GUI thread) is asserted below, by where the steps are computed.
        QVERIFY(!window->runs()->empty());
        const RunRecord& ran = window->runs()->entries().front().record;
        std::vector<double> step_ms;
        for (const StepMetrics& step : ran.steps) step_ms.push_back(step.step_ms);
        std::sort(step_ms.begin(), step_ms.end());
        qInfo("longest event-loop stall during the run: %lld ms (the run's median step: %.1f ms)",
              static_cast<long long>(worst), step_ms.empty() ? 0.0 : step_ms[step_ms.size() / 2]);
        const QSet<QThread*> threads = [&] {
            const QMutexLocker locker(&threadsLock);
            return stepThreads;
        }();
        QVERIFY2(threads.size() == 1 && !threads.contains(QThread::currentThread()),
                 "the steps must be computed on the run thread, never on the GUI thread");

        QCOMPARE(window->runs()->entries().size(), std::size_t{1});
        const RunRecord& record = window->runs()->entries().front().record;
        QCOMPARE(record.status, RunStatus::Finished);
        QCOMPARE(record.steps.size(), std::size_t{60});
        QVERIFY(record.summary.mean_ms.has_value());
        QCOMPARE(window->controller()->queue()->items().front().state, RunQueueModel::State::Finished);
        QVERIFY(window->charts()->refreshCount() >= 2);  // redrawn while running, not only at the end
        window->charts()->refreshIfDirty();
        const MetricPlot* loss = window->charts()->views().front()->plot();
        QCOMPARE(loss->traces().size(), std::size_t{1});
        QCOMPARE(loss->traces().front().raw.size(), std::size_t{60});
        QCOMPARE(window->comparison()->model()->rowCount(), 1);
        QVERIFY(!window->comparison()->model()->data(window->comparison()->model()->index(0, ComparisonModel::MeanMs))
                     .toString()
                     .startsWith(QStringLiteral("–")));
        // Saved to the store and listed in the history.
        QCOMPARE(store_count(), storedBefore + 1);
        QCOMPARE(window->history()->model()->rowCount(), storedBefore + 1);

        // Run again from the history queues the same configuration.
        window->history()->runAgain({window->history()->model()->runs().front().id});
        QCOMPARE(window->controller()->queue()->rowCount(), 2);
        QCOMPARE(window->controller()->queue()->items().back().config.model, make_preset(Preset::QuickCpu).model);

        // The history: search, reopen, delete.
        HistoryPanel* history = window->history();
        history->searchField()->setText(QStringLiteral("no such run"));
        QCOMPARE(history->filtered()->rowCount(), 0);
        history->searchField()->setText(QStringLiteral("TORCH FP32"));
        QVERIFY(history->filtered()->rowCount() >= 1);
        history->view()->selectRow(0);
        const std::vector<std::int64_t> selected = history->selectedIds();
        QCOMPARE(selected.size(), std::size_t{1});
        history->open(selected);
        QCOMPARE(window->runs()->entries().size(), std::size_t{2});
        QCOMPARE(window->runs()->entries().back().store_id, std::optional<std::int64_t>(selected.front()));
        history->remove(selected);
        QCOMPARE(store_count(), storedBefore);
        QCOMPARE(history->model()->rowCount(), storedBefore);
    }

    // Processes 2 in the run setup: the job runs as te-bench's processes, and the window shows it as one run
    // after its 1-process reference run, with a band of its ranks on the step-time chart and its scaling
    // efficiency in the table. On a machine with one GPU the field is greyed out, saying why.
    void dataParallelJobFromTheWindow() {
        qputenv("TEWB_TE_BENCH", TE_BENCH_PATH);
        auto window = make_window();
        RunSetupPanel* setup = window->setupPanel();
        setup->applyPreset(Preset::QuickCpu);
        auto* processes = qobject_cast<QSpinBox*>(setup->field("nproc"));
        QVERIFY(processes && processes->isEnabled());  // CPU processes
        processes->setValue(2);
        qobject_cast<QSpinBox*>(setup->field("iters"))->setValue(6);
        qobject_cast<QLineEdit*>(setup->field("name"))->setText(QStringLiteral("dp job"));
        QCOMPARE(setup->config().dist.nproc, 2);
        QVERIFY(setup->addButton()->isEnabled());
        setup->addButton()->click();
        QSignalSpy drained(window->controller(), &RunController::queueDrained);
        window->queuePanel()->startButton()->click();
        QVERIFY(drained.wait(kRunTimeoutMs));
        const auto& entries = window->runs()->entries();
        QCOMPARE(entries.size(), std::size_t{2});  // the 1-process run, then the job
        const RunRecord& job = entries.back().record;
        QVERIFY2(job.status == RunStatus::Finished, job.message.c_str());
        QVERIFY(job.execution.dist && job.execution.dist->world_size == 2 && job.execution.dist->scaling_efficiency);
        QVERIFY(entries.front().record.config.name.find("(1 process)") != std::string::npos);
        window->charts()->refreshIfDirty();
        const MetricPlot* stepTime = window->charts()->views()[1]->plot();
        bool band = false;
        for (const MetricPlot::Trace& t : stepTime->traces()) band = band || (t.band_of_ranks && t.band_lo.size() == job.steps.size());
        QVERIFY(band);
        ComparisonModel* table = window->comparison()->model();
        // The wording depends on how the machine behaved (above 100 % or noisy under load); each form names both.
        const QString scaling = table->data(table->index(1, ComparisonModel::Scaling)).toString();
        QVERIFY2(scaling.contains(QStringLiteral(" efficient")) && scaling.contains(QStringLiteral("2 processes")), qPrintable(scaling));
        QCOMPARE(scaling.contains(QStringLiteral("above 100 %")), *job.execution.dist->scaling_efficiency > 1.0);
        QCOMPARE(table->data(table->index(0, ComparisonModel::Scaling)).toString(), QStringLiteral("–"));
        // The tooltip says with how many threads each side computed (the efficiency includes it on the CPU).
        const RunRecord& single = entries.front().record;
        QVERIFY(single.execution.quality && job.execution.quality);
        QCOMPARE(job.execution.dist->baseline_threads, single.execution.quality->threads);
        const QString tip = table->data(table->index(1, ComparisonModel::Scaling), Qt::ToolTipRole).toString();
        QVERIFY2(tip.contains(QStringLiteral("Threads: %1 CPU thread").arg(single.execution.quality->threads)) &&
                     tip.contains(QStringLiteral(" in the 1-process run, %1 in each rank.").arg(job.execution.quality->threads)),
                 qPrintable(tip));
        // Processes and repeats do not mix.
        processes->setValue(2);
        setup->setRepeats(3);
        QVERIFY(!setup->addButton()->isEnabled());
        QVERIFY(!setup->problemAt("nproc").isEmpty());
        setup->setRepeats(1);

        // One GPU: no processes to spread over; the field says so.
        const DeviceInfo one_gpu = test::gpu(9, 0, "Test GPU");
        setup->setDevice(one_gpu, classify(one_gpu));
        qobject_cast<QComboBox*>(setup->field("device"))->setCurrentIndex(
            qobject_cast<QComboBox*>(setup->field("device"))->findData(static_cast<int>(DeviceKind::Cuda)));
        QVERIFY(!processes->isEnabled());
        QVERIFY2(processes->toolTip().contains(QStringLiteral("one GPU")), qPrintable(processes->toolTip()));
        QVERIFY(!setup->config().dist.enabled());
    }

    // Cancel during a job's training reaches its ranks (te-bench processes the worker started through core's
    // run_data_parallel_job) as SIGINT: every rank stops after the same step, and the job ends cancelled, not
    // failed, leaving no process. The reference run is a stand-in here, so that the job starts at once.
    void cancelReachesTheJobsRanks() {
        qRegisterMetaType<tewb::RunRecord>();
        RunConfig config = make_preset(Preset::QuickCpu);
        config.iters = 100000;
        config.dist.nproc = 2;
        config.dist.timeout_s = 3600;
        config.name = QStringLiteral("cancelled job %1").arg(QCoreApplication::applicationPid()).toStdString();
        const auto train = [](const ResolvedRun& resolved_run, const TrainerCallbacks&, const std::atomic<bool>*) {
            const RunConfig& c = resolved_run.config;
            RunRecord record;
            record.config = c;
            record.status = RunStatus::Finished;
            return record;
        };
        RunWorker worker(test::no_gpu(), train, QStringLiteral(TE_BENCH_PATH));
        // The ranks' process ids, once both handle SIGINT (before that, SIGINT would kill a rank: a failure).
        const auto ranks_ready = [&config] {
            QProcess pgrep;
            pgrep.start(QStringLiteral("pgrep"), {QStringLiteral("-f"), QString::fromStdString(config.name)});
            pgrep.waitForFinished();
            const QStringList pids = QString::fromUtf8(pgrep.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts);
            if (pids.size() != 2) return false;
            for (const QString& pid : pids) {
                QFile status(QStringLiteral("/proc/%1/status").arg(pid));
                if (!status.open(QIODevice::ReadOnly)) return false;
                const QString text = QString::fromUtf8(status.readAll());
                const QRegularExpressionMatch caught = QRegularExpression(QStringLiteral("SigCgt:\\s*([0-9a-f]+)")).match(text);
                if (!caught.hasMatch() || (caught.captured(1).toULongLong(nullptr, 16) & (1ULL << (SIGINT - 1))) == 0)
                    return false;
            }
            return true;
        };
        std::atomic<bool> done{false};
        std::thread canceller([&] {
            QDeadlineTimer limit(120000);
            while (!done.load() && !limit.hasExpired() && !ranks_ready())
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // into training
            worker.cancel();
        });
        QSignalSpy ended(&worker, &RunWorker::runEnded);
        worker.runOne(1, resolve_run(config, test::no_gpu()));
        done.store(true);
        canceller.join();
        QCOMPARE(ended.count(), 1);
        const RunRecord job = ended.front().at(1).value<RunRecord>();
        QVERIFY2(job.status == RunStatus::Cancelled, job.message.c_str());
        QVERIFY(job.execution.dist && job.execution.dist->world_size == 2);
        QVERIFY(!ranks_ready());
    }

    // Run > Trace one step of each run: the runs that start afterwards trace one more step to traces/ beside the
    // run store, and their top kernels appear beside the time breakdown; unticked, runs are not traced.
    void tracedRunShowsItsTopKernels() {
        auto window = make_window();
        QAction* trace = window->findChild<QAction*>(QStringLiteral("traceRuns"));
        QVERIFY(trace != nullptr && trace->isCheckable() && !trace->isChecked());
        trace->setChecked(true);
        QVERIFY(window->controller()->traceRuns());
        queue_quick_run(*window, 4, QStringLiteral("traced run"));
        QSignalSpy drained(window->controller(), &RunController::queueDrained);
        window->queuePanel()->startButton()->click();
        QVERIFY(drained.wait(kRunTimeoutMs));
        QCOMPARE(window->runs()->entries().size(), std::size_t{1});
        const RunRecord& record = window->runs()->entries().front().record;
        QCOMPARE(record.status, RunStatus::Finished);
        QVERIFY2(record.execution.kernel_profile.has_value(), record.execution.kernel_profile_error.c_str());
        const std::filesystem::path written = record.execution.kernel_profile->trace_path;
        QVERIFY2(std::filesystem::is_regular_file(written), written.c_str());
        QCOMPARE(written.parent_path(), RunStore::default_path().parent_path() / "traces");
        QTRY_COMPARE_WITH_TIMEOUT(window->comparison()->topKernels()->runChooser()->count(), 1, 5000);
        QVERIFY(window->comparison()->topKernels()->view()->model()->rowCount() > 0);

        trace->setChecked(false);
        queue_quick_run(*window, 2, QStringLiteral("plain run"));
        window->queuePanel()->startButton()->click();
        QVERIFY(drained.wait(kRunTimeoutMs));
        QCOMPARE(window->runs()->entries().size(), std::size_t{2});
        QVERIFY(!window->runs()->entries().back().record.execution.kernel_profile.has_value());
    }

    void cancelStopsTheRunWithinAStepAndTheNextRunWorks() {
        auto window = make_window();
        queue_quick_run(*window, 100000, QStringLiteral("long"));
        window->queuePanel()->startButton()->click();
        QTRY_VERIFY_WITH_TIMEOUT(!window->runs()->empty() && window->runs()->entries().front().record.steps.size() >= 3,
                                 kRunTimeoutMs);
        QVERIFY(window->queuePanel()->cancelButton()->isEnabled());
        QElapsedTimer clock;
        clock.start();
        window->queuePanel()->cancelButton()->click();
        QTRY_VERIFY_WITH_TIMEOUT(!window->controller()->isRunning(), 10'000);
        // How soon is a figure (it depends on the step time and the machine's load); that the trainer stops
        // within one step of the flag is core's promise, held by tst_training.
        qInfo("cancelled after %lld ms", static_cast<long long>(clock.elapsed()));
        const RunRecord& cancelled = window->runs()->entries().front().record;
        QCOMPARE(cancelled.status, RunStatus::Cancelled);
        QVERIFY(cancelled.steps.size() < 100);
        QCOMPARE(window->controller()->queue()->items().front().state, RunQueueModel::State::Cancelled);

        QSignalSpy drained(window->controller(), &RunController::queueDrained);
        queue_quick_run(*window, 5, QStringLiteral("after cancel"));
        window->queuePanel()->startButton()->click();
        QVERIFY(drained.wait(kRunTimeoutMs));
        QCOMPARE(window->runs()->entries().back().record.status, RunStatus::Finished);
    }

    void closingDuringARunCancelsJoinsAndKeepsTheRun() {
        auto window = make_window();
        const int storedBefore = store_count();
        queue_quick_run(*window, 100000, QStringLiteral("closed mid-run"));
        window->queuePanel()->startButton()->click();
        QTRY_VERIFY_WITH_TIMEOUT(!window->runs()->empty() && window->runs()->entries().front().record.steps.size() >= 2,
                                 kRunTimeoutMs);
        // Closing asks first; "Keep running" (the default, and Escape) keeps the window and the run.
        QVERIFY(!window->close());
        auto* box = window->findChild<QMessageBox*>(QStringLiteral("closeDuringRunBox"));
        QVERIFY(box != nullptr);
        QVERIFY(box->text().contains(QStringLiteral("saved as a cancelled run")));
        QCOMPARE(box->defaultButton(), box->findChild<QPushButton*>(QStringLiteral("keepRunning")));
        box->findChild<QPushButton*>(QStringLiteral("keepRunning"))->click();
        QVERIFY(window->isVisible());
        QVERIFY(window->controller()->isRunning());
        QVERIFY(!window->close());
        box = window->findChild<QMessageBox*>(QStringLiteral("closeDuringRunBox"));
        QVERIFY(box != nullptr);
        QElapsedTimer clock;
        clock.start();
        box->findChild<QPushButton*>(QStringLiteral("stopAndClose"))->click();
        QTRY_VERIFY_WITH_TIMEOUT(!window->isVisible(), 10'000);
        QVERIFY(!window->controller()->isRunning());
        qInfo("closed after %lld ms", static_cast<long long>(clock.elapsed()));  // a figure: the run stopped, not finished
        window.reset();
        RunStore store(RunStore::default_path());
        const std::vector<StoredRun> runs = store.list();
        QCOMPARE(static_cast<int>(runs.size()), storedBefore + 1);
        QCOMPARE(runs.front().name, std::string("closed mid-run"));
        QCOMPARE(runs.front().status, std::string("cancelled"));
        QVERIFY(runs.front().steps >= 2);
    }

    void aFailedRunShowsCoresMessageAndTheNextRunWorks() {
        const Trainer trainer(test::no_gpu());
        const std::string failure = "loss became nan at step 3 (fp32, lr 0.003); lower --lr or use --precision fp32";
        auto window = make_window([&](const ResolvedRun& resolved_run, const TrainerCallbacks& callbacks, const std::atomic<bool>* cancel) {
            const RunConfig& config = resolved_run.config;
            if (config.name != "fails") return trainer.run(config, callbacks, cancel);
            // What core's trainer returns for a run that diverged: the record, failed, with its message.
            RunRecord record = make_run_header(resolve_run(config, test::no_gpu()), test::no_gpu());
            mark_failed(record, ErrorKind::Numerics, failure);
            callbacks.on_start(record);
            return record;
        });
        QSignalSpy errors(window.get(), &MainWindow::errorShown);
        QSignalSpy drained(window->controller(), &RunController::queueDrained);
        queue_quick_run(*window, 5, QStringLiteral("fails"));
        queue_quick_run(*window, 5, QStringLiteral("works"));
        window->queuePanel()->startButton()->click();
        QVERIFY(drained.wait(kRunTimeoutMs));
        QCOMPARE(errors.count(), 1);
        QCOMPARE(errors.front().front().toString(), QString::fromStdString(failure));
        const auto& items = window->controller()->queue()->items();
        QCOMPARE(items[0].state, RunQueueModel::State::Failed);
        QCOMPARE(items[0].message, QString::fromStdString(failure));
        QCOMPARE(items[1].state, RunQueueModel::State::Finished);
        QVERIFY(window->findChild<QMessageBox*>(QStringLiteral("errorBox")));
        QCOMPARE(window->runs()->entries().size(), std::size_t{2});

        // A configuration this machine cannot run is refused when queued, with core's reason.
        RunConfig cuda = make_preset(Preset::QuickCpu);
        cuda.device = DeviceKind::Cuda;
        const std::optional<QString> refused = window->controller()->enqueue(cuda);
        QVERIFY(refused);
        QVERIFY(refused->startsWith(QStringLiteral("--device cuda: no usable CUDA device")));
    }

    void exportsWriteEveryFileAtomically() {
        auto window = make_window();
        QSignalSpy drained(window->controller(), &RunController::queueDrained);
        window->setupPanel()->applyPreset(Preset::QuickCpu);
        qobject_cast<QSpinBox*>(window->setupPanel()->field("iters"))->setValue(10);
        window->setupPanel()->compareButton()->click();
        QCOMPARE(window->controller()->queue()->rowCount(), 5);  // CPU: torch fp32, torch bf16, te fp32, te bf16, te fp8
        window->queuePanel()->startButton()->click();
        QVERIFY(drained.wait(kRunTimeoutMs));
        QCOMPARE(window->runs()->entries().size(), std::size_t{5});
        QVERIFY(window->fp8Panel()->hasStatistics());
        // The FP8 view: one entry per cast slot of the model, each plotting amax and scale for the FP8 run.
        Fp8Panel* fp8 = window->fp8Panel();
        QVERIFY(fp8->slots().size() >= 4);
        fp8->selectSlot(1);
        QVERIFY(fp8->views()[0]->plot()->spec().title.contains(QString::fromStdString(fp8->slots()[1].module)));
        // Shown the way a user shows it: the FP8 tab (the charts and the inspector in one page).
        QTabWidget* tabs = window->rightTabs();
        QVERIFY(tabs);
        for (int i = 0; i < tabs->count(); ++i) {
            if (tabs->widget(i)->isAncestorOf(fp8)) tabs->setCurrentIndex(i);
        }
        QVERIFY(fp8->isVisible());
        fp8->markDirty();
        fp8->refreshIfDirty();
        const MetricPlot* amax = fp8->views()[0]->plot();
        const auto withData = std::count_if(amax->traces().begin(), amax->traces().end(),
                                            [](const MetricPlot::Trace& t) { return !t.raw.empty(); });
        QCOMPARE(withData, 1);  // only the te fp8 run has FP8 statistics
        QVERIFY(fp8->options().log_y);

        QTemporaryDir dir;
        QString error;
        QVERIFY2(window->exportAll(dir.path(), &error), qPrintable(error));
        const QImage dashboard(dir.filePath(QStringLiteral("dashboard.png")));
        QCOMPARE(dashboard.size(), QSize(3200, 2000));
        for (const char* name : {"loss.png", "step_ms.png", "memory.png", "fp8_amax.png", "fp8_scale.png"}) {
            const QImage chart(dir.filePath(QString::fromUtf8(name)));
            QCOMPARE(chart.size(), QSize(2400, 1400));
            QVERIFY2(test::distinct_colours(chart) > 8, name);  // not blank
        }
        for (const RunCollection::Entry& e : window->runs()->entries()) {
            QVERIFY2(test::count_near(dashboard, e.colour) > 20, qPrintable(e.colour.name()));
        }
        QFile steps(dir.filePath(QStringLiteral("steps.csv")));
        QVERIFY(steps.open(QIODevice::ReadOnly));
        const QList<QByteArray> stepLines = steps.readAll().trimmed().split('\n');
        QCOMPARE(stepLines.size(), 1 + 5 * 15);  // header + every raw step of every run
        QFile comparison(dir.filePath(QStringLiteral("comparison.csv")));
        QVERIFY(comparison.open(QIODevice::ReadOnly));
        const QList<QByteArray> rows = comparison.readAll().trimmed().split('\n');
        QCOMPARE(rows.size(), 6);
        QVERIFY(rows[0].contains("speedup"));
        QVERIFY(rows[1].contains(",1,1"));  // the baseline against itself
        QVERIFY(QFile::exists(dir.filePath(QStringLiteral("fp8.csv"))));
        const std::vector<RunRecord> records = read_record_files(dir.filePath(QStringLiteral("runs.json")).toStdString());
        QCOMPARE(records.size(), std::size_t{5});
        QCOMPARE(records[4].config.precision, Precision::Fp8);

        // The user's baseline choice reaches the comparison CSV.
        window->comparison()->model()->setBaseline(window->runs()->entries()[2].key);
        QVERIFY(window->exportComparisonCsv(dir.filePath(QStringLiteral("comparison.csv")), &error));
        QFile again(dir.filePath(QStringLiteral("comparison.csv")));
        QVERIFY(again.open(QIODevice::ReadOnly));
        QVERIFY(again.readAll().trimmed().split('\n')[3].contains(",1,1"));

        // An unwritable target gives a message and leaves nothing behind.
        QVERIFY(!window->exportDashboardPng(QStringLiteral("/nonexistent-folder/dashboard.png"), &error));
        QVERIFY2(error.contains(QStringLiteral("/nonexistent-folder")), qPrintable(error));
        QVERIFY(!window->exportStepsCsv(dir.path(), &error));  // a folder, not a file
        QVERIFY(!error.isEmpty());

        // Dark theme: charts switch theme and keep the run colours (the dashboard tab shown again).
        tabs->setCurrentIndex(0);
        window->setDark(true);
        window->charts()->refreshIfDirty();
        const MetricPlot* plot = window->charts()->views().front()->plot();
        QCOMPARE(plot->backgroundBrush().color(), chart_colours(true).background);  // Theme's style_chart
        const auto* timed = qobject_cast<const QLineSeries*>(plot->series()[2]);
        QCOMPARE(timed->pen().color(), window->runs()->entries().front().colour);
        window->setDark(false);
    }

    // A run the store refuses (a full disk, say) is not a quiet success: a dialog says so and names the
    // JSON file the record was kept in.
    void unsavedRunShowsADialog() {
        const std::filesystem::path store = RunStore::default_path();
        { RunStore create(store); }
        const auto exec = [&](const char* sql) {
            sqlite3* db = nullptr;
            QCOMPARE(sqlite3_open(store.c_str(), &db), SQLITE_OK);
            QCOMPARE(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK);
            sqlite3_close(db);
        };
        exec("CREATE TRIGGER refuse BEFORE INSERT ON runs BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END;");
        auto window = make_window();
        QSignalSpy errors(window.get(), &MainWindow::errorShown);
        QSignalSpy drained(window->controller(), &RunController::queueDrained);
        queue_quick_run(*window, 2);
        window->queuePanel()->startButton()->click();
        QVERIFY(drained.wait(kRunTimeoutMs));
        exec("DROP TRIGGER refuse");
        QCOMPARE(errors.count(), 1);
        const QString message = errors.front().front().toString();
        QVERIFY2(message.contains(QStringLiteral("not in the history")) && message.contains(QStringLiteral("unsaved-run-")),
                 qPrintable(message));
        auto* box = window->findChild<QMessageBox*>(QStringLiteral("errorBox"));
        QVERIFY(box && box->isVisible());
        box->close();
        for (const auto& entry : std::filesystem::directory_iterator(store.parent_path())) {
            if (entry.path().filename().string().rfind("unsaved-run-", 0) == 0) std::filesystem::remove(entry.path());
        }
    }

    // The History tab only reads: it shows a store it may not write, and reading never creates one.
    void historyReadsWithoutWriting() {
        QTemporaryDir dir;
        const QString missing = dir.filePath(QStringLiteral("none/runs.sqlite3"));
        HistoryPanel panel(missing.toStdString());
        QSignalSpy problems(&panel, &HistoryPanel::problem);
        panel.refresh();
        QCOMPARE(problems.count(), 0);
        QVERIFY(!QFileInfo::exists(missing));
    }

    // A 1024×700 screen less a window manager's frame and a taskbar: after every tab has shown data (the
    // inspected FP8 run's heat map included), the window's minimum still fits in 1000×620, so its status bar
    // and lower tables stay on the screen; pages that need more scroll inside their tab. At a 1280-pixel-wide
    // window the comparison table's default columns fit its viewport, and its chooser hides and shows columns.
    // The queue never scrolls sideways (a long name gives up width first, its full text in the tooltip), a row
    // just queued is scrolled into view, and the columns fit again when rows go ("Clear queued").
    void queueFitsItsPaneAndShowsNewRows() {
        auto window = make_window();
        RunQueuePanel* queue = window->queuePanel();
        QTableView* view = queue->view();
        for (const QSize size : {QSize(1280, 800), QSize(1024, 700)}) {
            window->resize(size);
            QTest::qWait(200);
            RunConfig config = make_preset(Preset::QuickCpu);
            for (int i = 0; i < 16; ++i) {
                config.name = "a long run name the queue has to fit into its narrow pane, number " + std::to_string(i);
                QVERIFY(!window->controller()->enqueue(config));
            }
            QTest::qWait(50);
            QVERIFY2(!view->horizontalScrollBar()->isVisible(), qPrintable(QStringLiteral("at %1x%2").arg(size.width()).arg(size.height())));
            const QModelIndex last = view->model()->index(view->model()->rowCount() - 1, RunQueueModel::Name);
            QVERIFY(view->viewport()->rect().intersects(view->visualRect(last)));
            queue->clearQueuedButton()->click();
            QCOMPARE(view->model()->rowCount(), 0);
            QVERIFY(!view->horizontalScrollBar()->isVisible());
        }
    }

    void windowFitsASmallScreenWithEveryTabVisited() {
        auto window = make_window();
        for (const RunRecord& r : window_fixture()) window->runs()->add(r);
        Fp8Inspector* inspector = window->fp8Inspector();
        QCOMPARE(inspector->heatMap()->rows(), 48);
        for (const QSize size : {QSize(1024, 700), QSize(1280, 800), QSize(1920, 1080)}) {
            window->resize(size);
            visit_every_tab(*window);
            for (const QSize minimum : {window->minimumSizeHint(), window->minimumSize()}) {
                QVERIFY2(minimum.width() <= 1000 && minimum.height() <= 620,
                         qPrintable(QStringLiteral("minimum %1×%2 at %3×%4")
                                        .arg(minimum.width())
                                        .arg(minimum.height())
                                        .arg(size.width())
                                        .arg(size.height())));
            }
        }

        window->resize(1280, 800);
        window->rightTabs()->setCurrentIndex(0);
        QTest::qWait(300);
        ComparisonPanel* comparison = window->comparison();
        QTableView* table = comparison->view();
        const auto shown_width = [table] {
            int width = 0;
            for (int c = 0; c < table->model()->columnCount(); ++c) {
                if (!table->isColumnHidden(c)) width += table->horizontalHeader()->sectionSize(c);
            }
            return width;
        };
        QVERIFY2(shown_width() <= table->viewport()->width(),
                 qPrintable(QStringLiteral("columns %1 px, viewport %2 px").arg(shown_width()).arg(table->viewport()->width())));
        QVERIFY(!table->horizontalScrollBar()->isVisible());
        // No header is cut: every shown column is at least as wide as its header text needs.
        for (int c = 0; c < table->model()->columnCount(); ++c) {
            if (table->isColumnHidden(c)) continue;
            QVERIFY2(table->horizontalHeader()->sectionSize(c) >= table->horizontalHeader()->sectionSizeHint(c),
                     qPrintable(table->model()->headerData(c, Qt::Horizontal).toString()));
        }
        QVERIFY(table->isColumnHidden(ComparisonModel::Implementation));
        QVERIFY(!table->isColumnHidden(ComparisonModel::Speedup));
        QVERIFY(!table->isColumnHidden(ComparisonModel::Status));  // a cancelled run must not look finished
        QAction* implementation = nullptr;
        for (QAction* action : comparison->columnsMenu()->actions()) {
            if (action->data().toInt() == ComparisonModel::Implementation) implementation = action;
        }
        QVERIFY(implementation && !implementation->isChecked());
        implementation->trigger();
        QVERIFY(!table->isColumnHidden(ComparisonModel::Implementation));
        QCOMPARE(comparison->columnChoices().value(QStringLiteral("Implementation")).toBool(), true);
        implementation->trigger();
        QVERIFY(table->isColumnHidden(ComparisonModel::Implementation));

        // Every spin box and combo box of the window (setup, sweep, charts, FP8, comparison) ignores the wheel
        // until it has focus, and the wheel never gives it focus.
        for (QWidget* control : window->findChildren<QAbstractSpinBox*>()) QCOMPARE(control->focusPolicy(), Qt::StrongFocus);
        for (QWidget* control : window->findChildren<QComboBox*>()) QCOMPARE(control->focusPolicy(), Qt::StrongFocus);
    }

    // The comparison table's column choices are remembered with the window's other settings.
    void comparisonColumnChoicesAreRemembered() {
        QTemporaryDir dir;
        QSettings settings(dir.filePath(QStringLiteral("te-workbench.ini")), QSettings::IniFormat);
        {
            auto window = make_window();
            window->comparison()->setColumnShown(ComparisonModel::Tflops, true);
            window->comparison()->setColumnShown(ComparisonModel::Speedup, false);
            QVERIFY(!window->comparison()->isColumnShown(ComparisonModel::Speedup));
            window->saveSettings(settings);
        }
        auto again = make_window();
        QVERIFY(!again->comparison()->isColumnShown(ComparisonModel::Tflops));  // hidden by default
        again->restoreSettings(settings);
        QVERIFY(again->comparison()->isColumnShown(ComparisonModel::Tflops));
        QVERIFY(!again->comparison()->isColumnShown(ComparisonModel::Speedup));
        QVERIFY(again->comparison()->isColumnShown(ComparisonModel::MeanMs));  // untouched: its default
    }

    // Where the window goes on a real screen: inside the available area (the screen less the taskbar) with
    // its window manager's frame, shrunk when it is too large (a first opening at 1400×900 on a 1280×800
    // screen, a geometry saved on a larger screen), moved when it is off the area, never below its minimum.
    void windowIsFittedIntoTheAvailableArea() {
        const QMargins frame(4, 24, 4, 4);
        const QRect available(0, 0, 1280, 776);  // 1280×800 less a 24-pixel taskbar
        QCOMPARE(fit_into(QRect(0, 0, 1400, 900), frame, available, QSize(900, 600)), QRect(4, 24, 1272, 748));
        const QRect fits(100, 80, 1000, 600);
        QCOMPARE(fit_into(fits, frame, available, QSize(900, 600)), fits);
        // Saved on a 1920×1080 screen at its right: moved back and shrunk.
        QCOMPARE(fit_into(QRect(1500, 300, 1600, 1000), frame, available, QSize(900, 600)), QRect(4, 24, 1272, 748));
        QCOMPARE(fit_into(QRect(-50, -10, 800, 500), frame, available, QSize(640, 480)), QRect(4, 24, 800, 500));
        // A screen smaller than the minimum: the minimum wins (the window manager then decides).
        QCOMPARE(fit_into(QRect(0, 0, 1400, 900), frame, QRect(0, 0, 800, 560), QSize(900, 600)).size(), QSize(900, 600));
        QCOMPARE(available_client_size(QRect(0, 0, 1024, 676), kFrameAllowance), QSize(1008, 628));
        QVERIFY(kPreferredWindowSize.boundedTo(available_client_size(QRect(0, 0, 1024, 676), kFrameAllowance)).width() <= 1024);
    }

    void openingRecords() {
        auto window = make_window();
        QTemporaryDir dir;
        QSignalSpy errors(window.get(), &MainWindow::errorShown);

        const QString bad = dir.filePath(QStringLiteral("bad.json"));
        QFile file(bad);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("{\"schema_version\": 1, \"id\": 5}");
        file.close();
        QVERIFY(!window->openRecords(bad));
        QCOMPARE(errors.count(), 1);
        QVERIFY2(errors.front().front().toString().contains(bad), qPrintable(errors.front().front().toString()));
        auto* box = window->findChild<QMessageBox*>(QStringLiteral("errorBox"));
        QVERIFY(box);
        QVERIFY(box->isVisible());
        box->close();
        QVERIFY(window->runs()->empty());
        QVERIFY(!window->openRecords(dir.filePath(QStringLiteral("missing.json"))));
        QCOMPARE(errors.count(), 2);

        // Records made elsewhere (a GPU server's te-bench) open into the charts and table.
        RunRecord remote = test::synthetic_record("h200 te fp8", 40, 10, 3);
        remote.environment.device = test::gpu(9, 0, "NVIDIA H200");
        remote.config.backend = Backend::Te;
        remote.config.precision = Precision::Fp8;
        remote.config.device = DeviceKind::Cuda;
        const QString good = dir.filePath(QStringLiteral("good.json"));
        QFile out(good);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(QByteArray::fromStdString(records_to_json_text({remote, test::synthetic_record("h200 torch", 40, 10, 5)})));
        out.close();
        QVERIFY(window->openRecords(good));
        QCOMPARE(window->runs()->entries().size(), std::size_t{2});
        QCOMPARE(window->comparison()->model()->rowCount(), 2);
        window->charts()->refreshIfDirty();
        QCOMPARE(window->charts()->views().front()->plot()->traces().size(), std::size_t{2});

        // A name with a control character is refused like `te-bench history import` refuses it; so is [].
        const QString crafted = dir.filePath(QStringLiteral("crafted.json"));
        QFile crafted_file(crafted);
        QVERIFY(crafted_file.open(QIODevice::WriteOnly));
        crafted_file.write(QByteArray::fromStdString(record_to_json_text(test::synthetic_record("a\x1b[2Jb", 4, 1, 3))));
        crafted_file.close();
        QVERIFY(!window->openRecords(crafted));
        QVERIFY(errors.back().front().toString().contains(QStringLiteral("control character")));
        const QString empty = dir.filePath(QStringLiteral("empty.json"));
        QFile empty_file(empty);
        QVERIFY(empty_file.open(QIODevice::WriteOnly));
        empty_file.write("[]");
        empty_file.close();
        QVERIFY(!window->openRecords(empty));
        QCOMPARE(window->runs()->entries().size(), std::size_t{2});
        // The whole import rule, not the names alone: a run still "running" in a file of otherwise good records
        // is refused, and none of them opens.
        RunRecord running = test::synthetic_record("still running", 4, 1, 3);
        running.status = RunStatus::Running;
        const QString mixed = dir.filePath(QStringLiteral("mixed.json"));
        QFile mixed_file(mixed);
        QVERIFY(mixed_file.open(QIODevice::WriteOnly));
        mixed_file.write(QByteArray::fromStdString(records_to_json_text({test::synthetic_record("fine", 4, 1, 3), running})));
        mixed_file.close();
        QVERIFY(!window->openRecords(mixed));
        QVERIFY2(errors.back().front().toString().contains(QStringLiteral("$.status 'running'")),
                 qPrintable(errors.back().front().toString()));
        QVERIFY(errors.back().front().toString().contains(QStringLiteral("nothing was opened")));
        QCOMPARE(window->runs()->entries().size(), std::size_t{2});
        for (auto* box : window->findChildren<QMessageBox*>()) box->close();

        // Running it again here is refused with core's reason: this machine has no GPU.
        QSignalSpy before(window.get(), &MainWindow::errorShown);
        QVERIFY(window->controller()->enqueue(window->runs()->entries().front().record.config).has_value());
    }

    // A sweep's runs stay in the Sweep tab: the dashboard's table and charts do not get them until "Show sweep
    // runs on the dashboard" (the View menu's action, the tab's check box) is ticked; unticking takes them away.
    void sweepRunsStayInTheSweepTabUntilShown() {
        auto window = make_window(&fake_sweep_train);
        RunSetupPanel* setup = window->setupPanel();
        setup->applyPreset(Preset::QuickCpu);
        QVERIFY(test::run_tiny_sweep(*window, QStringLiteral("64,128"), kRunTimeoutMs));
        SweepPanel* sweep = window->sweep();
        const RunCollection* sweepRuns = window->controller()->sweepRuns();
        QVERIFY(sweepRuns->entries().size() >= 4);  // two sizes, the baseline and each precision
        for (const RunCollection::Entry& e : sweepRuns->entries()) QCOMPARE(e.sweep, QStringLiteral("Sweep 1"));
        const QString queued = window->controller()->queue()->index(0, RunQueueModel::Name).data().toString();
        QVERIFY2(queued.startsWith(QStringLiteral("Sweep 1 · ")), qPrintable(queued));
        QCOMPARE(window->comparison()->model()->rowCount(), 0);
        window->charts()->refreshIfDirty();
        QVERIFY(window->charts()->views().front()->plot()->traces().empty());

        QAction* show = sweep->showOnDashboardAction();
        QVERIFY(!show->isChecked());
        const QList<QObject*> where = show->associatedObjects();
        QVERIFY(std::any_of(where.begin(), where.end(), [](QObject* o) { return qobject_cast<QMenu*>(o) != nullptr; }));
        show->trigger();
        QVERIFY(sweep->showOnDashboardBox()->isChecked());
        QCOMPARE(window->comparison()->model()->rowCount(), static_cast<int>(sweepRuns->entries().size()));
        window->charts()->refreshIfDirty();
        QCOMPARE(window->charts()->views().front()->plot()->traces().size(), sweepRuns->entries().size());
        sweep->showOnDashboardBox()->setChecked(false);
        QVERIFY(!show->isChecked());
        QCOMPARE(window->comparison()->model()->rowCount(), 0);
    }

    // Runs opened from the history get the baseline a user expects: the torch run, not the emulated FP8 run
    // that arrived first; with no torch run, the te run that is not emulated.
    void openingFromTheHistoryPicksATorchBaseline() {
        auto window = make_window();
        const RunRecord emulated = test::synthetic_record_of("history te fp8", Backend::Te, Precision::Fp8, true, 12, 2, 4);
        const RunRecord te = test::synthetic_record_of("history te bf16", Backend::Te, Precision::Bf16, false, 12, 2, 6);
        const RunRecord torch = test::synthetic_record_of("history torch bf16", Backend::Torch, Precision::Bf16, false, 12, 2, 8);
        std::vector<std::int64_t> ids;
        {
            RunStore store(RunStore::default_path());
            for (const RunRecord& r : {emulated, te, torch}) ids.push_back(store.save(r));
        }
        window->history()->refresh();
        window->history()->open(ids);
        QCOMPARE(window->runs()->entries().size(), std::size_t{3});
        const auto keyOf = [&](const std::string& name) {
            for (const RunCollection::Entry& e : window->runs()->entries()) {
                if (e.record.config.name == name) return e.key;
            }
            return 0;
        };
        QCOMPARE(window->comparison()->model()->baseline(), keyOf("history torch bf16"));
        window->runs()->clear();
        window->history()->open({ids[0], ids[1]});
        QCOMPARE(window->comparison()->model()->baseline(), keyOf("history te bf16"));
    }

    // Several runs selected in the table leave the view at once; "Remove all runs from view" empties it (every
    // run here is in the store, so without a question) and the status bar says what happened.
    void removingSeveralAndAllRunsFromTheView() {
        auto window = make_window();
        for (int i = 0; i < 4; ++i) {
            window->runs()->add(test::synthetic_record("view run " + std::to_string(i), 6, 1, 3), 100 + i);
        }
        QTableView* table = window->comparison()->view();
        for (const int row : {0, 2}) {
            table->selectionModel()->select(table->model()->index(row, 0), QItemSelectionModel::Select | QItemSelectionModel::Rows);
        }
        menu_action(*window, QStringLiteral("Remove selected runs from view"))->trigger();
        QCOMPARE(window->runs()->entries().size(), std::size_t{2});
        QCOMPARE(window->runs()->entries()[0].record.config.name, std::string("view run 1"));
        QCOMPARE(window->runs()->entries()[1].record.config.name, std::string("view run 3"));
        QVERIFY2(window->statusBar()->currentMessage().contains(QStringLiteral("Removed 2 runs")),
                 qPrintable(window->statusBar()->currentMessage()));
        menu_action(*window, QStringLiteral("Remove all runs from view"))->trigger();
        QVERIFY(window->runs()->empty());
        QVERIFY(!window->findChild<QMessageBox*>(QStringLiteral("removeAllRunsBox")));
    }

    // File → Export comparison CSV… opens in the last folder used and, once written, says where: in the status
    // bar and in the label that keeps it after the status bar has moved on.
    void anExportSaysWhereItWrote() {
        auto window = make_window();
        window->runs()->add(test::synthetic_record("exported run", 6, 1, 3));
        QTemporaryDir dir;
        RememberedFolder::rememberFolder(dir.path());
        QString startedIn;
        QTimer driver;
        connect(&driver, &QTimer::timeout, this, [&] {
            auto* dialog = qobject_cast<QFileDialog*>(QApplication::activeModalWidget());
            if (!dialog) return;
            startedIn = dialog->directory().absolutePath();
            auto* name = dialog->findChild<QLineEdit*>(QStringLiteral("fileNameEdit"));
            QVERIFY(name);
            name->setText(QStringLiteral("comparison.csv"));
            QMetaObject::invokeMethod(dialog, "accept");
        });
        driver.start(20);
        menu_action(*window, QStringLiteral("Export comparison CSV"))->trigger();
        driver.stop();
        QCOMPARE(startedIn, QDir::cleanPath(dir.path()));
        QVERIFY(QFile::exists(dir.filePath(QStringLiteral("comparison.csv"))));
        const QString expected = QStringLiteral("Saved comparison.csv to %1").arg(QDir::toNativeSeparators(QDir::cleanPath(dir.path())));
        QCOMPARE(window->statusBar()->currentMessage(), expected);
        auto* notice = window->statusBar()->findChild<SaveNotice*>(QStringLiteral("saveNotice"));
        QVERIFY(notice && notice->isVisible());
        window->statusBar()->showMessage(QStringLiteral("Running something else"));
        QCOMPARE(notice->message(), expected);
    }
};

QTEST_MAIN(TestWorkbench)
#include "tst_workbench.moc"

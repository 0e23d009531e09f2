// The workbench end to end on the CPU: runs driven through the window, cancel, close during a run, a
// failed run, exports, opening records, responsiveness.
#include <QtTest>

#include <csignal>
#include <filesystem>

#include <sqlite3.h>

#include <QComboBox>
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
#include "ui/charts/Fp8Panel.h"
#include "ui/charts/TopKernelsPanel.h"
#include "ui/history/HistoryModel.h"
#include "ui/history/HistoryPanel.h"
#include "ui/runs/RunWorker.h"
#include "ui/runs/RunCollection.h"
#include "ui/runs/RunController.h"
#include "ui/runs/RunQueuePanel.h"
#include "ui/setup/RunSetupPanel.h"
#include "ui/table/ComparisonModel.h"
#include "ui/table/ComparisonPanel.h"
#include "ui/window/MainWindow.h"

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

int store_count() {
    RunStore store(RunStore::default_path());
    return static_cast<int>(store.list().size());
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
        auto window = make_window([&](const RunConfig& config, const TrainerCallbacks& callbacks, const std::atomic<bool>* cancel) {
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
        QVERIFY2(table->data(table->index(1, ComparisonModel::Scaling)).toString().contains(QStringLiteral("efficient, 2 processes")),
                 qPrintable(table->data(table->index(1, ComparisonModel::Scaling)).toString()));
        QCOMPARE(table->data(table->index(0, ComparisonModel::Scaling)).toString(), QStringLiteral("–"));
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
        const auto train = [](const RunConfig& c, const TrainerCallbacks&, const std::atomic<bool>*) {
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
        worker.runOne(1, config);
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
        QElapsedTimer clock;
        clock.start();
        QVERIFY(window->close());
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
        auto window = make_window([&](const RunConfig& config, const TrainerCallbacks& callbacks, const std::atomic<bool>* cancel) {
            if (config.name != "fails") return trainer.run(config, callbacks, cancel);
            // What core's trainer returns for a run that diverged: the record, failed, with its message.
            RunRecord record = make_run_header(resolve(config, test::no_gpu()), test::no_gpu());
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
        QWidget* page = fp8->parentWidget();
        auto* tabs = qobject_cast<QTabWidget*>(page->parentWidget()->parentWidget());
        QVERIFY(tabs);
        tabs->setCurrentWidget(page);
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
        QCOMPARE(plot->theme(), QChart::ChartThemeDark);
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
};

QTEST_MAIN(TestWorkbench)
#include "tst_workbench.moc"

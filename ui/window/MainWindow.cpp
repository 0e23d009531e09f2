#include "ui/window/MainWindow.h"

#include <algorithm>
#include <cstdio>
#include <exception>

#include <QAction>
#include <QDialog>
#include <QFontDatabase>
#include <QPlainTextEdit>
#include <QVBoxLayout>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QFileDialog>
#include <QKeySequence>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QThread>

#include "core/common/BuildInfo.h"
#include "core/common/Error.h"
#include "core/device/Capability.h"
#include "core/common/StandardStreams.h"
#include "core/results/AtomicFile.h"
#include "core/results/RecordCsv.h"
#include "core/results/RecordImport.h"
#include "core/results/RecordJson.h"
#include "core/results/RunStore.h"
#include "core/selftest/SelfTest.h"
#include "core/config/RunConfig.h"
#include "ui/capability/CapabilityPanel.h"
#include "ui/charts/ChartsPanel.h"
#include "ui/charts/Fp8Inspector.h"
#include "ui/charts/Fp8Panel.h"
#include "ui/common/RememberedFolder.h"
#include "ui/common/Theme.h"
#include "ui/common/WheelGuard.h"
#include "ui/export/Export.h"
#include "ui/export/SaveNotice.h"
#include "ui/export/WindowExports.h"
#include "ui/history/HistoryPanel.h"
#include "ui/report/Report.h"
#include "ui/runs/RunCollection.h"
#include "ui/runs/RunController.h"
#include "ui/runs/RunQueuePanel.h"
#include "ui/runs/RunViewActions.h"
#include "ui/setup/RunSetupPanel.h"
#include "ui/sweep/SweepPanel.h"
#include "ui/table/ComparisonModel.h"
#include "ui/table/ComparisonPanel.h"
#include "ui/window/WindowFit.h"

namespace tewb::ui {

namespace {

std::filesystem::path toPath(const QString& path) {
    return std::filesystem::path(path.toStdString());
}

// Runs `write`, turning core's and the filesystem's errors into `error`.
template <typename Write>
bool guarded(QString* error, Write&& write) {
    try {
        write();
        return true;
    } catch (const std::exception& e) {
        if (error) *error = QString::fromStdString(e.what());
        return false;
    }
}

}  // namespace

MainWindow::MainWindow(std::function<DeviceInfo()> detect, QWidget* parent, RunWorker::TrainFunction train)
    : QMainWindow(parent), detect_(std::move(detect)), train_(std::move(train)), runs_(new RunCollection(this)),
      controller_(new RunController(runs_, this)) {
    setWindowTitle(tr("TE Workbench"));

    capabilityPanel_ = new CapabilityPanel(this);
    setupPanel_ = new RunSetupPanel(this);
    queuePanel_ = new RunQueuePanel(controller_, this);
    charts_ = new ChartsPanel(runs_, {loss_metric(), step_ms_metric(), memory_metric()}, 3, this);
    fp8Panel_ = new Fp8Panel(runs_, this);
    comparison_ = new ComparisonPanel(runs_, this);
    history_ = new HistoryPanel(RunStore::default_path(), this);
    sweep_ = new SweepPanel(runs_, controller_->sweepRuns(), this);

    buildLayout();

    modeLabel_ = new QLabel(tr("Detecting the GPU…"), this);
    statusBar()->addPermanentWidget(modeLabel_);
    saveNotice_ = new SaveNotice(statusBar());

    connect(setupPanel_, &RunSetupPanel::addRequested, this,
            [this](const RunConfig& config) { enqueue(config, setupPanel_->repeats()); });
    connect(setupPanel_, &RunSetupPanel::compareRequested, this,
            [this](const RunConfig& base) { enqueueComparison(base, setupPanel_->repeats()); });
    connect(controller_, &RunController::progressText, this, [this](const QString& text) { statusBar()->showMessage(text); });
    connect(controller_, &RunController::runProblem, this, [this](const QString& message) {
        if (!demo_) showError(tr("Run failed"), message);
        statusBar()->showMessage(message);
    });
    connect(controller_, &RunController::runNotSaved, this, [this](const QString& message) {
        if (demo_) {
            demo_->notSaved << message;
        } else {
            showError(tr("Run not saved"), message);
        }
        statusBar()->showMessage(message);
    });
    connect(controller_, &RunController::runSaved, history_, &HistoryPanel::refresh);
    connect(sweep_, &SweepPanel::runRequested, this, &MainWindow::startSweep);
    connect(controller_, &RunController::queueDrained, sweep_, &SweepPanel::queueDrained);
    connect(controller_, &RunController::queueDrained, this, [this] {
        statusBar()->showMessage(tr("Queue done: %n run(s) shown", nullptr, static_cast<int>(runs_->entries().size())));
        if (demo_ && demo_->started) finishDemo();
    });
    connect(history_, &HistoryPanel::openRequested, this, [this](const RunRecord& record, qint64 storeId) {
        runs_->add(record, storeId);
        rightTabs_->setCurrentIndex(0);
    });
    connect(history_, &HistoryPanel::openFinished, this, [this](int opened) {  // a torch run, never an emulated one
        const auto key = runs_->baselineAfterOpening(comparison_->model()->baseline(), static_cast<std::size_t>(opened));
        if (key) comparison_->model()->setBaseline(*key);
    });
    connect(history_, &HistoryPanel::rerunRequested, this, [this](const RunConfig& config) { enqueue(config); });
    connect(capabilityPanel_, &CapabilityPanel::selfTestRequested, this, &MainWindow::runSelfTest);
    connect(history_, &HistoryPanel::problem, this, [this](const QString& message) { showError(tr("History"), message); });
    history_->refresh();

    buildActions();
    guard_wheel(this);
    resize(has_real_screen() && screen() ? kPreferredWindowSize.boundedTo(available_client_size(
                                                screen()->availableGeometry(), kFrameAllowance))
                                          : kPreferredWindowSize);
    startDetection();
}

MainWindow::~MainWindow() {
    controller_->shutdown();
}

void MainWindow::buildActions() {
    buildFileMenu();
    buildRunMenu();
    buildViewMenu();
    buildHelpMenu();
}

void MainWindow::buildFileMenu() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* open = file->addAction(tr("&Open records…"), this, [this] {
        const QString path = choose_open_file(this, tr("Open run records"),
                                                          tr("Run records (*.json);;All files (*)"));
        if (!path.isEmpty()) openRecords(path);
    });
    open->setShortcut(QKeySequence::Open);
    file->addSeparator();
    QAction* dashboardPng = file->addAction(tr("Export &dashboard PNG…"), this, [this] {
        exportWithDialog(tr("Export dashboard"), tr("PNG images (*.png)"), QStringLiteral("dashboard.png"),
                         &MainWindow::exportDashboardPng);
    });
    dashboardPng->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    QAction* chartPngs = file->addAction(tr("Export &chart PNGs…"), this, [this] {
        exportToFolder(tr("Export each chart as PNG into"), &MainWindow::exportChartPngs);
    });
    chartPngs->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
    file->addAction(tr("Export per-step &CSV…"), this, [this] {
        exportWithDialog(tr("Export per-step CSV"), tr("CSV files (*.csv)"), QStringLiteral("steps.csv"),
                         &MainWindow::exportStepsCsv);
    });
    file->addAction(tr("Export compa&rison CSV…"), this, [this] {
        exportWithDialog(tr("Export comparison CSV"), tr("CSV files (*.csv)"), QStringLiteral("comparison.csv"),
                         &MainWindow::exportComparisonCsv);
    });
    file->addAction(tr("Export &FP8 statistics CSV…"), this, [this] {
        exportWithDialog(tr("Export FP8 statistics"), tr("CSV files (*.csv)"), QStringLiteral("fp8.csv"),
                         &MainWindow::exportFp8Csv);
    });
    file->addAction(tr("Export &JSON records…"), this, [this] {
        exportWithDialog(tr("Export run records"), tr("JSON files (*.json)"), QStringLiteral("runs.json"),
                         &MainWindow::exportJson);
    });
    QAction* tensorBoard = file->addAction(tr("Export for &TensorBoard…"), this, [this] {
        const QString dir = exportToFolder(tr("Write TensorBoard event files (a folder per run) into"), &MainWindow::exportTensorBoard);
        if (dir.isEmpty()) return;
        statusBar()->showMessage(tr("TensorBoard event files written; view them with: tensorboard --logdir %1").arg(dir),
                                 SaveNotice::kStatusMs);
    });
    tensorBoard->setObjectName(QStringLiteral("exportTensorBoard"));
    tensorBoard->setToolTip(tr("Each run's loss, validation loss, step time, tokens/s, memory and FP8 amax/scale per slot, "
                               "as event files that `tensorboard --logdir FOLDER` shows"));
    file->addSeparator();
    QAction* report = file->addAction(tr("&Report…"), this, [this] {
        exportWithDialog(tr("Write report"), tr("PDF (*.pdf);;Self-contained HTML (*.html)"), QStringLiteral("report.pdf"),
                         &MainWindow::exportReport);
    });
    report->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);
}

void MainWindow::buildRunMenu() {
    QMenu* run = menuBar()->addMenu(tr("&Run"));
    QAction* add = run->addAction(tr("&Add to queue"), this, [this] { setupPanel_->addButton()->click(); });
    add->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return));
    QAction* compare = run->addAction(tr("&Compare (baseline and every variant)"), this,
                                      [this] { setupPanel_->compareButton()->click(); });
    compare->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Return));
    QAction* start = run->addAction(tr("&Start queue"), controller_, &RunController::start);
    start->setShortcut(QKeySequence(Qt::Key_F5));
    QAction* cancel = run->addAction(tr("C&ancel run"), controller_, &RunController::cancel);
    cancel->setShortcut(QKeySequence(Qt::SHIFT | Qt::Key_F5));
    run->addSeparator();
    traceAction_ = run->addAction(tr("&Trace one step of each run (top kernels)"));
    traceAction_->setObjectName(QStringLiteral("traceRuns"));
    traceAction_->setCheckable(true);
    traceAction_->setToolTip(tr("Runs that start from now on run one more step after their timed ones under LibTorch's "
                                "profiler: a trace file in traces/ beside the run store, and the top-kernels table "
                                "beside the time breakdown. The step is not in the statistics."));
    connect(traceAction_, &QAction::toggled, controller_, &RunController::setTraceRuns);
    run->addSeparator();
    QAction* remove = run->addAction(tr("&Remove selected runs from view"), this, [this] {
        std::vector<int> keys;
        for (const QModelIndex& index : comparison_->view()->selectionModel()->selectedRows()) {
            keys.push_back(comparison_->model()->keyAt(index.row()));
        }
        statusBar()->showMessage(remove_runs_from_view(*runs_, keys));  // a live run stays until it ends
    });
    remove->setShortcut(QKeySequence::Delete);
    run->addAction(tr("Remove a&ll runs from view…"), this, [this] {
        remove_all_runs_from_view(this, runs_, [this](const QString& done) { statusBar()->showMessage(done); });
    });
    addActions({add, compare, start, cancel, remove});
}

void MainWindow::buildViewMenu() {
    QMenu* view = menuBar()->addMenu(tr("&View"));
    darkAction_ = view->addAction(tr("&Dark theme"));
    darkAction_->setCheckable(true);
    darkAction_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_D));
    connect(darkAction_, &QAction::toggled, this, &MainWindow::setDark);
    QAction* resetZoom = view->addAction(tr("&Reset zoom"), this, [this] {
        Q_EMIT charts_->controls()->resetZoomRequested();
        Q_EMIT fp8Panel_->controls()->resetZoomRequested();
    });
    resetZoom->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_0));
    const auto showTab = [this, view](const QString& text, int index, Qt::Key key) {
        QAction* a = view->addAction(text, this, [this, index] { rightTabs_->setCurrentIndex(index); });
        a->setShortcut(QKeySequence(Qt::ALT | key));
        addAction(a);
    };
    view->addSeparator();
    showTab(tr("Das&hboard"), 0, Qt::Key_1);
    showTab(tr("&FP8"), 1, Qt::Key_2);
    showTab(tr("H&istory"), 2, Qt::Key_3);
    showTab(tr("S&weep"), 3, Qt::Key_4);
    view->addAction(sweep_->showOnDashboardAction());
}

void MainWindow::buildHelpMenu() {
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&Keyboard shortcuts"), this, [this] {
        auto* box = new QMessageBox(QMessageBox::Information, tr("Keyboard shortcuts"),
                                    tr("Ctrl+Return  add the setup to the queue\n"
                                       "Ctrl+Shift+Return  queue a comparison\n"
                                       "F5  start the queue\n"
                                       "Shift+F5  cancel the running run\n"
                                       "Ctrl+O  open run records\n"
                                       "Ctrl+E  export the dashboard PNG\n"
                                       "Ctrl+Shift+E  export each chart as PNG\n"
                                       "Ctrl+0  reset zoom\n"
                                       "Ctrl+Shift+D  dark theme\n"
                                       "Alt+1/2/3/4  dashboard, FP8, history, sweep\n"
                                       "Ctrl+R  write a report (PDF or HTML)\n"
                                       "Delete  remove the selected runs from view"),
                                    QMessageBox::Ok, this);
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->open();
    });
    help->addAction(tr("&About TE Workbench"), this, [this] {
        const BuildInfo& build = build_info();
        QMessageBox::about(this, tr("About TE Workbench"),
                           tr("TE Workbench %1 (%2)\nMeasures what fused kernels and FP8 training buy on your GPU.")
                               .arg(QString::fromStdString(build.version), QString::fromStdString(build.commit)));
    });
}

void MainWindow::startDetection() {
    capabilityPanel_->showDetecting();
    statusBar()->showMessage(tr("Detecting the GPU…"));
    QThread* worker = QThread::create([this, detect = detect_] {
        const DeviceInfo device = detect();
        QMetaObject::invokeMethod(this, [this, device] { onDeviceDetected(device); }, Qt::QueuedConnection);
    });
    connect(worker, &QThread::finished, worker, &QObject::deleteLater);
    // A child of the window: QThread::create's thread waits for its function when destroyed, so closing
    // the window during detection joins it rather than leaving it to post to a deleted window.
    worker->setParent(this);
    worker->start();
}

void MainWindow::onDeviceDetected(const DeviceInfo& device) {
    device_ = device;
    const Capability capability = classify(device);
    capabilityPanel_->showDevice(device, capability);
    setupPanel_->setDevice(device, capability);
    controller_->setDevice(device, train_);
    const QString mode = QString::fromUtf8(to_string(capability.mode).data());
    modeLabel_->setText(device.has_gpu()    ? tr("%1 · mode %2").arg(QString::fromStdString(device.gpu_name), mode)
                        : cpu_machine(device) ? tr("CPU · no NVIDIA GPU")
                                              : tr("CPU fallback · mode %1").arg(mode));
    statusBar()->showMessage(tr("Ready"));
    Q_EMIT deviceDetected();
    if (demo_) beginDemo();
}

void MainWindow::runSelfTest() {
    if (!device_) return;
    if (controller_->isRunning()) {
        showError(tr("Self-test"), tr("A run is training on this GPU; run the self-test when the queue is done (it would "
                                      "disturb the run's timings)."));
        return;
    }
    QPushButton* button = capabilityPanel_->selfTestButton();
    button->setEnabled(false);
    statusBar()->showMessage(tr("Running the self-test: every fused kernel against its reference…"));
    QThread* worker = QThread::create([this, device = *device_] {
        const SelfTestReport report = run_self_test(device);
        QMetaObject::invokeMethod(
            this,
            [this, report] {
                capabilityPanel_->selfTestButton()->setEnabled(true);
                const auto failed = std::count_if(report.cases.begin(), report.cases.end(),
                                                  [](const SelfTestCase& c) { return !c.passed(); });
                const QString summary =
                    !report.ran ? tr("Self-test skipped: %1").arg(QString::fromStdString(report.skip_reason))
                    : report.passed()
                        ? tr("Self-test passed: %n check(s)", nullptr, static_cast<int>(report.cases.size()))
                        : tr("Self-test FAILED: %1 of %2 checks%3")
                              .arg(failed)
                              .arg(report.cases.size())
                              .arg(report.error.empty() ? QString() : tr(", stopped by: %1").arg(QString::fromStdString(report.error)));
                statusBar()->showMessage(summary);
                auto* dialog = new QDialog(this);
                dialog->setObjectName(QStringLiteral("selfTestDialog"));
                dialog->setWindowTitle(tr("Self-test"));
                dialog->setAttribute(Qt::WA_DeleteOnClose);
                auto* layout = new QVBoxLayout(dialog);
                layout->addWidget(new QLabel(summary, dialog));
                auto* table = new QPlainTextEdit(QString::fromStdString(render_self_test_table(report)), dialog);
                table->setReadOnly(true);
                table->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
                table->setLineWrapMode(QPlainTextEdit::NoWrap);
                layout->addWidget(table);
                dialog->resize(900, 600);
                dialog->open();
                Q_EMIT selfTestFinished(report.passed());
            },
            Qt::QueuedConnection);
    });
    connect(worker, &QThread::finished, worker, &QObject::deleteLater);
    worker->setParent(this);  // joined with the window, as detection is
    worker->start();
}

void MainWindow::showError(const QString& title, const QString& message) {
    statusBar()->showMessage(message);
    Q_EMIT errorShown(message);
    if (demo_) {
        std::fprintf(stderr, "te-workbench: %s\n", message.toLocal8Bit().constData());
        return;
    }
    auto* box = new QMessageBox(QMessageBox::Warning, title, message, QMessageBox::Ok, this);
    box->setObjectName(QStringLiteral("errorBox"));
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
}

void MainWindow::enqueue(const RunConfig& config, int repeats) {
    if (const std::optional<QString> problem = controller_->enqueue(config, repeats)) {
        showError(tr("Cannot queue this run"), *problem);
        return;
    }
    statusBar()->showMessage(tr("Queued %1; press F5 or Start to run the queue")
                                 .arg(QString::fromStdString(controller_->queue()->items().back().config.name)));
}

void MainWindow::enqueueComparison(const RunConfig& base, int repeats) {
    if (const std::optional<QString> problem = controller_->enqueueComparison(base, repeats)) {
        showError(tr("Cannot queue the comparison"), *problem);
        return;
    }
    // Like "Run sweep", "Compare" starts at once ("Add to queue" is the button that only queues).
    statusBar()->showMessage(tr("Comparison started"));
    controller_->start();
}

bool MainWindow::openRecords(const QString& path) {
    // The import rule of `te-bench history import` (core's check_import), without the store: opening does not
    // store. All or nothing: one bad record and nothing opens.
    std::vector<ImportRecord> checked;
    try {
        checked = check_import({path.toStdString()}, nullptr);
    } catch (const DataError& e) {
        showError(tr("Cannot open run records"), tr("%1; nothing was opened.").arg(QString::fromStdString(e.what())));
        return false;
    } catch (const std::exception& e) {
        showError(tr("Cannot open run records"), QString::fromStdString(e.what()));
        return false;
    }
    std::vector<RunRecord> records;
    for (ImportRecord& item : checked) records.push_back(std::move(item.record));
    for (RunRecord& r : records) runs_->add(std::move(r));
    if (const auto key = runs_->baselineAfterOpening(comparison_->model()->baseline(), records.size())) {
        comparison_->model()->setBaseline(*key);
    }
    rightTabs_->setCurrentIndex(0);
    statusBar()->showMessage(tr("Opened %n record(s) from %1", nullptr, static_cast<int>(records.size())).arg(path));
    return true;
}

void MainWindow::setDark(bool dark) {
    dark_ = dark;
    if (darkAction_ && darkAction_->isChecked() != dark) {
        const QSignalBlocker block(darkAction_);
        darkAction_->setChecked(dark);
    }
    apply_theme(dark);
    charts_->setDark(dark);
    fp8Panel_->setDark(dark);
    sweep_->setDark(dark);
    comparison_->setDark(dark);
}

ExportSources MainWindow::exportSources() const {
    ExportSources sources{*runs_, comparison_->model()->summarizedRecords(), comparison_->model()->baselineIndex(),
                          charts_->options(), {}, {}};
    for (const MetricChartView* view : charts_->views()) sources.charts.push_back({view->plot()->spec(), view->plot()->options()});
    if (fp8Panel_->hasStatistics()) {
        for (const MetricChartView* view : fp8Panel_->views()) {
            sources.charts.push_back({view->plot()->spec(), view->plot()->options()});
        }
        const Fp8Inspector* inspector = fp8Inspector_;
        sources.heat_map = [inspector](QSize size) { return inspector->heatMap()->render(size); };
    }
    return sources;
}

bool MainWindow::exportDashboardPng(const QString& path, QString* error) const {
    return guarded(error, [&] { export_dashboard_png(exportSources(), toPath(path)); });
}

bool MainWindow::exportChartPngs(const QString& directory, QString* error) const {
    return guarded(error, [&] { export_chart_pngs(exportSources(), toPath(directory)); });
}

bool MainWindow::exportStepsCsv(const QString& path, QString* error) const {
    return guarded(error, [&] { export_steps_csv(exportSources(), toPath(path)); });
}

bool MainWindow::exportComparisonCsv(const QString& path, QString* error) const {
    return guarded(error, [&] { export_comparison_csv(exportSources(), toPath(path)); });
}

bool MainWindow::exportFp8Csv(const QString& path, QString* error) const {
    return guarded(error, [&] { export_fp8_csv(exportSources(), toPath(path)); });
}

bool MainWindow::exportJson(const QString& path, QString* error) const {
    return guarded(error, [&] { export_json(exportSources(), toPath(path)); });
}

bool MainWindow::exportTensorBoard(const QString& directory, QString* error) const {
    return guarded(error, [&] { export_tensorboard(exportSources(), toPath(directory)); });
}

bool MainWindow::exportReport(const QString& path, QString* error) const {
    return guarded(error, [&] {
        report_format(toPath(path));  // before the report is built
        if (runs_->empty()) throw DataError(path.toStdString() + ": there are no runs to report on");
        write_report(toPath(path), build_report(*runs_, comparison_->model()->summarizedRecords(),
                                                comparison_->model()->baselineIndex(), charts_->options()));
    });
}

int MainWindow::writeReportOfStoredRuns(const std::vector<std::int64_t>& ids, const QString& path) {
    std::vector<std::pair<RunRecord, std::int64_t>> records;
    try {
        const RunStore store(RunStore::default_path(), RunStore::Access::ReadOnly);
        for (const std::int64_t id : ids) {
            std::optional<RunRecord> record;
            try {
                record = store.get(id);
            } catch (const DamagedRecordError& e) {  // the report is written of the others
                std::fprintf(stderr, "te-workbench: --runs: skipped run %lld: %s\n", static_cast<long long>(e.id()), e.what());
                continue;
            }
            if (!record) {
                std::fprintf(stderr, "te-workbench: --runs: no run %lld in %s; see `te-bench history list`\n",
                             static_cast<long long>(id), store.path().c_str());
                return 2;
            }
            records.emplace_back(std::move(*record), id);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "te-workbench: %s\n", e.what());
        return 1;
    }
    if (records.empty()) {
        std::fprintf(stderr, "te-workbench: --runs: every run asked for is damaged; no report written\n");
        return 1;
    }
    for (auto& [record, id] : records) runs_->add(std::move(record), id);
    comparison_->model()->setBaseline(comparison_->model()->firstPossibleBaseline());
    QString error;
    if (!exportReport(path, &error)) {
        std::fprintf(stderr, "te-workbench: report not written: %s\n", error.toLocal8Bit().constData());
        return 1;
    }
    std::printf("te-workbench: report of %zu run(s) written to %s\n", records.size(), path.toLocal8Bit().constData());
    if (const std::string problem = standard_output_problem(); !problem.empty()) {
        std::fprintf(stderr, "te-workbench: standard output: write failed (%s); the report was written to %s\n", problem.c_str(),
                     path.toLocal8Bit().constData());
        return 1;
    }
    return 0;
}

QStringList MainWindow::exportAllFileNames() {
    return export_all_file_names();
}

bool MainWindow::exportAll(const QString& directory, QString* error) {
    if (!QDir().mkpath(directory)) {
        if (error) *error = tr("%1: the export folder could not be created").arg(directory);
        return false;
    }
    // The window itself as it looks now (a screenshot, for the README and slides), then every other file.
    return guarded(error, [&] { export_all(exportSources(), grab().toImage(), toPath(directory)); });
}

void MainWindow::exportWithDialog(const QString& title, const QString& filter, const QString& suggested,
                                  bool (MainWindow::*write)(const QString&, QString*) const) {
    const QString path = choose_save_file(this, title, suggested, filter);
    if (path.isEmpty()) return;
    QString error;
    if ((this->*write)(path, &error)) {
        saveNotice_->saved(path);
    } else {
        saveNotice_->failed(path, error);
        showError(tr("Export failed"), not_saved_message(path, error));
    }
}

QString MainWindow::exportToFolder(const QString& title, bool (MainWindow::*write)(const QString&, QString*) const) {
    const QString dir = choose_folder(this, title);
    if (dir.isEmpty()) return {};
    QString error;
    if ((this->*write)(dir, &error)) {
        saveNotice_->saved(dir);
        return dir;
    }
    saveNotice_->failed(dir, error);
    showError(tr("Export failed"), error);
    return {};
}

void MainWindow::startSweep() {
    if (!device_) {
        showError(tr("Cannot start the sweep"), tr("The device is still being detected; try again in a moment."));
        return;
    }
    std::vector<SweepRun> plan;
    try {
        plan = plan_sweep(sweep_->spec(setupPanel_->config()), *device_);
    } catch (const std::exception& e) {
        showError(tr("Cannot start the sweep"), QString::fromStdString(e.what()));
        return;
    }
    int queued = 0;
    const QString sweepName = sweep_->newSweepName();
    for (const SweepRun& run : plan) {
        if (run.skip_reason) continue;
        if (const std::optional<QString> problem = controller_->enqueue(run.config, 1, sweepName)) {
            showError(tr("Cannot start the sweep"), *problem);
            return;
        }
        ++queued;
    }
    sweep_->follow(std::move(plan));
    statusBar()->showMessage(tr("Sweep: %n run(s) queued", nullptr, queued));
    controller_->start();
}

void MainWindow::askBeforeClosingDuringRun() {
    if (findChild<QMessageBox*>(QStringLiteral("closeDuringRunBox"))) return;  // already asking
    int queued = 0;
    for (const RunQueueModel::Item& item : controller_->queue()->items()) queued += item.state == RunQueueModel::State::Queued ? 1 : 0;
    auto* box = new QMessageBox(QMessageBox::Question, tr("A run is training"),
                                tr("A run is still training. Closing stops it within a step: its steps so far are saved as a "
                                   "cancelled run. %n queued run(s) will not start.", nullptr, queued),
                                QMessageBox::NoButton, this);
    box->setObjectName(QStringLiteral("closeDuringRunBox"));
    QPushButton* stop = box->addButton(tr("Stop and close"), QMessageBox::DestructiveRole);
    stop->setObjectName(QStringLiteral("stopAndClose"));
    QPushButton* keep = box->addButton(tr("Keep running"), QMessageBox::RejectRole);
    keep->setObjectName(QStringLiteral("keepRunning"));
    box->setDefaultButton(keep);
    box->setEscapeButton(keep);
    box->setAttribute(Qt::WA_DeleteOnClose);
    connect(box, &QMessageBox::buttonClicked, this, [this, stop](QAbstractButton* clicked) {
        if (clicked != stop) return;
        closeConfirmed_ = true;
        QMetaObject::invokeMethod(this, &QWidget::close, Qt::QueuedConnection);
    });
    box->open();
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (controller_->isRunning() && !closeConfirmed_) {
        event->ignore();
        askBeforeClosingDuringRun();
        return;
    }
    if (settings_) saveSettings(*settings_);
    // Cancels the running run within a step and joins the run thread; finished runs are already saved.
    if (controller_->isRunning()) statusBar()->showMessage(tr("Cancelling the running run…"));
    controller_->shutdown();
    event->accept();
}

}  // namespace tewb::ui

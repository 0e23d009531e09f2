#pragma once

#include <functional>
#include <memory>
#include <optional>

#include <QMainWindow>
#include <QString>

#include "core/device/DeviceInfo.h"
#include "ui/export/WindowExports.h"
#include "ui/runs/RunWorker.h"

class QAction;
class QSettings;
class QSplitter;
class QLabel;
class QTabWidget;

namespace tewb::ui {

class CapabilityPanel;
class ChartsPanel;
class ComparisonPanel;
class Fp8Inspector;
class Fp8Panel;
class HistoryPanel;
class RunCollection;
class RunController;
class RunQueuePanel;
class RunSetupPanel;
class SaveNotice;
class SweepPanel;

// What the demo mode runs: a preset, or core's comparison plan.
enum class DemoPlan { QuickCpu, Seed, Compare };

// The workbench: run setup, capability and queue on the left; the dashboard (charts and comparison
// table), the FP8 view and the history on the right.
class MainWindow : public QMainWindow {
    Q_OBJECT

public:
    // `detect` runs on a worker thread (it may initialise the CUDA driver); tests pass a fake, and may
    // replace core's trainer with `train`.
    explicit MainWindow(std::function<DeviceInfo()> detect, QWidget* parent = nullptr, RunWorker::TrainFunction train = {});
    ~MainWindow() override;

    CapabilityPanel* capabilityPanel() const { return capabilityPanel_; }
    RunSetupPanel* setupPanel() const { return setupPanel_; }
    RunController* controller() const { return controller_; }
    RunQueuePanel* queuePanel() const { return queuePanel_; }
    RunCollection* runs() const { return runs_; }
    ChartsPanel* charts() const { return charts_; }
    Fp8Panel* fp8Panel() const { return fp8Panel_; }
    Fp8Inspector* fp8Inspector() const { return fp8Inspector_; }
    ComparisonPanel* comparison() const { return comparison_; }
    HistoryPanel* history() const { return history_; }
    SweepPanel* sweep() const { return sweep_; }
    const std::optional<DeviceInfo>& device() const { return device_; }

    // Opens JSON records (one record or an array) into the charts; a bad file shows core's message.
    bool openRecords(const QString& path);
    void setDark(bool dark);
    bool isDark() const { return dark_; }

    // Layout (geometry, splitters, the tab shown), theme and the last run setup, remembered between
    // sessions: restoreSettings reads them (a missing or unreadable entry keeps the default), and with
    // rememberIn the window writes them to `settings` when it closes. Demo and report modes do neither,
    // so their output does not depend on the last session.
    void restoreSettings(QSettings& settings);
    void saveSettings(QSettings& settings) const;
    void rememberIn(std::unique_ptr<QSettings> settings);

    // The window and its frame inside the screen's available area (less taskbars): moved and shrunk when they
    // are not, as on opening, on restoring a geometry saved on a larger screen, and once the window manager
    // has framed the window. setFitToScreen(false) keeps a size asked for explicitly (`--window-size`).
    void fitToScreen();
    void setFitToScreen(bool fit);
    QTabWidget* rightTabs() const { return rightTabs_; }

    // Exports: each returns false and puts the reason in `error` (and writes nothing half-done).
    bool exportDashboardPng(const QString& path, QString* error) const;
    bool exportChartPngs(const QString& directory, QString* error) const;
    bool exportStepsCsv(const QString& path, QString* error) const;
    bool exportComparisonCsv(const QString& path, QString* error) const;
    bool exportFp8Csv(const QString& path, QString* error) const;
    bool exportJson(const QString& path, QString* error) const;
    // Every run shown as TensorBoard event files under `directory` (a folder per run; made where missing).
    bool exportTensorBoard(const QString& directory, QString* error) const;
    // The report of the runs shown, against the chosen baseline: PDF or self-contained HTML by extension.
    bool exportReport(const QString& path, QString* error) const;
    // Headless report: opens stored runs `ids` (the first is the baseline), writes `path`, prints what it
    // did and returns the exit status (0 written, 1 not written, 2 a bad id).
    int writeReportOfStoredRuns(const std::vector<std::int64_t>& ids, const QString& path);
    // Everything the demo mode writes, into `directory` (created when missing): window.png (a screenshot
    // of the window), dashboard.png, each chart's PNG, steps.csv, comparison.csv, runs.json and, with FP8
    // statistics, fp8.csv.
    bool exportAll(const QString& directory, QString* error);
    // The names of every file exportAll may write (some only with FP8 statistics), for the checks before a demo.
    static QStringList exportAllFileNames();

    // Runs `plan` once the device is known, exports into `directory` when the queue is done, then emits
    // demoFinished (0 when every run finished and every file was written) and, with `quit`, exits the
    // application with that code.
    void startDemo(DemoPlan plan, const QString& directory, bool quit);

Q_SIGNALS:
    void deviceDetected();
    void errorShown(QString message);
    void demoFinished(int exitCode, QString message);
    void selfTestFinished(bool passed);

protected:
    void closeEvent(QCloseEvent* event) override;
    void showEvent(QShowEvent* event) override;
    void moveEvent(QMoveEvent* event) override;

private:
    void buildLayout();  // the panels in their tabs and splitters
    void buildActions();
    void buildFileMenu();
    void buildRunMenu();
    void buildViewMenu();
    void buildHelpMenu();
    void startDetection();
    void onDeviceDetected(const DeviceInfo& device);
    void showError(const QString& title, const QString& message);
    void enqueue(const RunConfig& config, int repeats = 1);
    void enqueueComparison(const RunConfig& base, int repeats = 1);
    void beginDemo();
    // Plans the Sweep tab's grid with the run setup as base and queues its runs.
    void startSweep();
    // Runs core's self-test on a worker thread (it launches CUDA kernels) and shows its table.
    void runSelfTest();
    void finishDemo();
    // Closing while a run trains asks first ("closeDuringRunBox"): stop it (saved as cancelled) and close, or keep it.
    void askBeforeClosingDuringRun();
    ExportSources exportSources() const;  // the runs, comparison, charts and FP8 views, as they are now
    // A folder chosen, then `write` into it, the outcome said; the folder when it was written, empty otherwise.
    QString exportToFolder(const QString& title, bool (MainWindow::*write)(const QString&, QString*) const);
    void exportWithDialog(const QString& title, const QString& filter, const QString& suggested,
                          bool (MainWindow::*write)(const QString&, QString*) const);

    std::function<DeviceInfo()> detect_;
    RunWorker::TrainFunction train_;
    std::optional<DeviceInfo> device_;
    RunCollection* runs_;
    RunController* controller_;
    CapabilityPanel* capabilityPanel_;
    RunSetupPanel* setupPanel_;
    RunQueuePanel* queuePanel_;
    ChartsPanel* charts_;
    Fp8Panel* fp8Panel_;
    Fp8Inspector* fp8Inspector_;
    ComparisonPanel* comparison_;
    HistoryPanel* history_;
    SweepPanel* sweep_;
    QTabWidget* leftTabs_;
    QSplitter* mainSplitter_ = nullptr;
    QSplitter* leftSplitter_ = nullptr;
    QSplitter* dashboardSplitter_ = nullptr;
    std::unique_ptr<QSettings> settings_;
    QTabWidget* rightTabs_;
    QLabel* modeLabel_;
    SaveNotice* saveNotice_;  // where exports confirm what they wrote
    QAction* darkAction_ = nullptr;
    QAction* traceAction_ = nullptr;
    bool dark_ = false;
    bool fitToScreen_ = true;
    bool framePending_ = false;  // shown, the window manager's frame not known yet
    bool closeConfirmed_ = false;  // the user chose to stop the running run and close

    struct Demo {
        DemoPlan plan;
        QString directory;
        bool quit = false;
        bool started = false;
        QStringList notSaved;  // runs that ended but could not be saved: the demo then fails
    };
    std::optional<Demo> demo_;
};

}  // namespace tewb::ui

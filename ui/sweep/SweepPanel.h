#pragma once

#include <optional>
#include <vector>

#include <QImage>
#include <QWidget>

#include "core/config/SweepPlan.h"
#include "core/results/SweepResult.h"

class QAction;
class QChart;
class QChartView;
class QCheckBox;
class QComboBox;
class QLabel;
class QLayout;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace tewb::ui {

class RunCollection;
class RunMirror;

// "Where does FP8 pay?": a grid of model sizes, each trained briefly by the baseline and by the chosen
// backend in each precision (core's plan_sweep), then the speedup of each precision per size as a line
// chart with the break-even line at 1.0, a table, and the break-even size in words (core's
// analyze_sweep). The runs go through the window's run queue (one at a time, saved, cancellable) named
// after their sweep ("Sweep 1"), into the Sweep tab's own collection (RunController::sweepRuns), so they do
// not flood the dashboard; "Show sweep runs on the dashboard" (a check box here, an action for the View menu)
// mirrors them there. The panel follows them in its collection by name. Sizes that would not fit in memory
// are skipped with core's estimate as the reason. On the CPU, FP8 is emulated and the panel says so.
class SweepPanel : public QWidget {
    Q_OBJECT

public:
    // `sweepRuns` is where the sweep's runs arrive; `dashboard` the collection they are shown in on demand.
    SweepPanel(RunCollection* dashboard, RunCollection* sweepRuns, QWidget* parent = nullptr);

    // The grid typed in the form; the base (layers, steps, device, recipe, …) comes from the run setup.
    // Throws ConfigError naming the field.
    SweepSpec spec(const RunConfig& base) const;
    // Names the next sweep ("Sweep 2"): its runs are queued with that name, and follow() follows them.
    QString newSweepName();
    // Starts following `plan`: its runs are about to be queued (skipped rows are only listed).
    void follow(std::vector<SweepRun> plan);
    bool active() const { return !plan_.empty() && !done_; }
    const std::optional<SweepResult>& result() const { return result_; }

    QPushButton* runButton() const { return run_; }
    QLineEdit* hiddenField() const { return hidden_; }
    QLineEdit* batchField() const { return batch_; }
    QLineEdit* seqField() const { return seq_; }
    QSpinBox* warmupField() const { return warmup_; }
    QSpinBox* itersField() const { return iters_; }
    QSpinBox* repeatsField() const { return repeats_; }
    QChart* chart() const { return chart_; }
    QComboBox* backendField() const { return backend_; }
    QComboBox* baselineField() const { return baseline_; }
    QCheckBox* precisionBox(Precision p) const;
    QLabel* statement() const { return statement_; }
    QTableWidget* table() const { return table_; }
    QCheckBox* showOnDashboardBox() const { return showOnDashboard_; }
    // The same switch as the check box, for a menu.
    QAction* showOnDashboardAction() const { return showOnDashboardAction_; }
    RunMirror* dashboardMirror() const { return mirror_; }

    // The run queue emptied: ends a sweep whose remaining runs will not come.
    void queueDrained();
    QImage renderChart(QSize logical = {1200, 700}, qreal scale = 2.0) const;
    bool exportPng(const QString& path, QString* error) const;
    bool exportCsv(const QString& path, QString* error) const;
    void setDark(bool dark);

Q_SIGNALS:
    void runRequested();  // the window plans the sweep with the run setup's base and queues it
    void finished();      // every run of the sweep ended (or was skipped); the result is shown

private:
    void onRunChanged(int key);
    void update();
    void showResult();
    void drawChart(const SweepResult& result);
    // "Speedup against torch BF16 per size · NVIDIA H200 · 3 repeats per size, 1 noisy": what the PNG must say.
    QString chartTitle(const SweepResult& result) const;
    void fillTable(const SweepResult& result);
    void buildDashboardSwitch(QLayout* layout);
    void exportWithDialog(bool png);

    RunCollection* runs_;
    QLineEdit* hidden_;
    QLineEdit* batch_;
    QLineEdit* seq_;
    QComboBox* backend_;
    QComboBox* baseline_;
    QCheckBox* fp32_;
    QCheckBox* bf16_;
    QCheckBox* fp8_;
    QSpinBox* warmup_;
    QSpinBox* iters_;
    QSpinBox* repeats_;
    QPushButton* run_;
    QPushButton* exportPng_;
    QPushButton* exportCsv_;
    QLabel* progress_;
    QLabel* statement_;
    QChart* chart_;
    QChartView* chartView_;
    bool dark_ = false;  // the chart's theme colours
    QTableWidget* table_;
    QCheckBox* showOnDashboard_;
    QAction* showOnDashboardAction_;
    RunMirror* mirror_;
    int sweeps_ = 0;
    QString sweepName_;  // the sweep being followed

    std::vector<SweepRun> plan_;
    std::vector<std::optional<int>> keys_;  // each plan row's run in the collection, once it appears
    std::optional<SweepResult> result_;
    bool done_ = false;
};

}  // namespace tewb::ui

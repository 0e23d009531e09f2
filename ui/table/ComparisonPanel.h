#pragma once

#include <QWidget>

class QComboBox;
class QSplitter;
class QTableView;
class QTimer;

namespace tewb::ui {

class ComparisonModel;
class RunCollection;
class LedgerSummary;
class TimeBreakdownChart;
class TopKernelsPanel;

// The comparison table with the baseline picker above it, and beside it where each run's step time goes
// (a stacked bar per run), the launch ledger's totals and the top kernels of a traced run.
class ComparisonPanel : public QWidget {
    Q_OBJECT

public:
    ComparisonPanel(RunCollection* runs, QWidget* parent = nullptr);

    ComparisonModel* model() const { return model_; }
    QTableView* view() const { return view_; }
    TimeBreakdownChart* breakdown() const { return breakdown_; }
    LedgerSummary* ledger() const { return ledger_; }
    TopKernelsPanel* topKernels() const { return topKernels_; }
    QSplitter* splitter() const { return splitter_; }
    void setDark(bool dark);

private:
    void rebuildBaselineChoices();

    RunCollection* runs_;
    ComparisonModel* model_;
    QComboBox* baseline_;
    QTableView* view_;
    QSplitter* splitter_;
    TimeBreakdownChart* breakdown_;
    LedgerSummary* ledger_;
    TopKernelsPanel* topKernels_;
    QTimer* breakdownRefresh_;  // coalesces a live run's updates
};

}  // namespace tewb::ui

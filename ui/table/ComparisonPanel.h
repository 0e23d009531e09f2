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

// The comparison table with the baseline picker above it, and beside it where each run's step time goes
// (a stacked bar per run).
class ComparisonPanel : public QWidget {
    Q_OBJECT

public:
    ComparisonPanel(RunCollection* runs, QWidget* parent = nullptr);

    ComparisonModel* model() const { return model_; }
    QTableView* view() const { return view_; }
    TimeBreakdownChart* breakdown() const { return breakdown_; }
    LedgerSummary* ledger() const { return ledger_; }
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
    QTimer* breakdownRefresh_;  // coalesces a live run's updates
};

}  // namespace tewb::ui

#pragma once

#include <QVariantMap>
#include <QWidget>

class QComboBox;
class QMenu;
class QScrollArea;
class QSplitter;
class QTableView;
class QTimer;
class QToolButton;

namespace tewb::ui {

class ComparisonModel;
class RunCollection;
class LedgerSummary;
class SettingsDiffDialog;
class TimeBreakdownChart;
class TopKernelsPanel;

// The comparison table with the baseline picker and a column chooser above it, and beside it (under it when
// the panel is too narrow for both) where each run's step time goes (a stacked bar per run), the launch
// ledger's totals and the top kernels of a traced run.
class ComparisonPanel : public QWidget {
    Q_OBJECT

public:
    ComparisonPanel(RunCollection* runs, QWidget* parent = nullptr);

    ComparisonModel* model() const { return model_; }
    QTableView* view() const { return view_; }
    // The settings the two selected runs were given differently, in a dialog (nullptr unless two are selected).
    SettingsDiffDialog* showSettingsDiff();
    TimeBreakdownChart* breakdown() const { return breakdown_; }
    LedgerSummary* ledger() const { return ledger_; }
    TopKernelsPanel* topKernels() const { return topKernels_; }
    QSplitter* splitter() const { return splitter_; }
    QToolButton* columnsButton() const { return columnsButton_; }
    // The chooser's menu: one checkable entry per column (the header's context menu shows the same).
    QMenu* columnsMenu() const { return columnsMenu_; }
    void setDark(bool dark);

    // Columns shown. Less-used ones (see kHiddenByDefault in the .cpp) start hidden so that the table fits a
    // 1280-pixel window; the user's choices (setColumnShown, the menu) are kept as {header text: shown} for the
    // window's settings.
    void setColumnShown(int column, bool shown);
    bool isColumnShown(int column) const;
    QVariantMap columnChoices() const;
    void restoreColumnChoices(const QVariantMap& choices);
    // Sizes the columns to their contents (the run's name at most a cap, its full text in the tooltip) and
    // puts the side panel beside the table when both fit, under it otherwise.
    void fitColumns();
    // The width the table needs to show its shown columns without a horizontal scroll bar.
    int tableWidthNeeded() const;

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void rebuildBaselineChoices();
    void buildColumnsMenu();
    void placeSidePanel();
    void updateMinimumHeights();
    void showColumn(int column, bool shown);  // without recording a choice

    RunCollection* runs_;
    ComparisonModel* model_;
    QComboBox* baseline_;
    QToolButton* columnsButton_;
    QMenu* columnsMenu_;
    QTableView* view_;
    QSplitter* splitter_;
    QScrollArea* scroll_;
    QWidget* side_;
    TimeBreakdownChart* breakdown_;
    LedgerSummary* ledger_;
    TopKernelsPanel* topKernels_;
    QTimer* breakdownRefresh_;  // coalesces a live run's updates
    QVariantMap choices_;       // columns the user showed or hid, by header text
};

}  // namespace tewb::ui

#pragma once

#include <QWidget>

class QComboBox;
class QTableView;

namespace tewb::ui {

class ComparisonModel;
class RunCollection;

// The comparison table with the baseline picker above it.
class ComparisonPanel : public QWidget {
    Q_OBJECT

public:
    ComparisonPanel(RunCollection* runs, QWidget* parent = nullptr);

    ComparisonModel* model() const { return model_; }
    QTableView* view() const { return view_; }

private:
    void rebuildBaselineChoices();

    RunCollection* runs_;
    ComparisonModel* model_;
    QComboBox* baseline_;
    QTableView* view_;
};

}  // namespace tewb::ui

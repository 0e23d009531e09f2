#pragma once

#include <vector>

#include <QWidget>

#include "core/results/RunRecord.h"

class QComboBox;
class QLabel;
class QPushButton;
class QSortFilterProxyModel;
class QStandardItemModel;
class QTableView;

namespace tewb::ui {

// Beside the time breakdown: the "top kernels" table of a run traced with `te-bench run --profile` (the
// record's execution.kernel_profile): kernel, launches, total and mean µs, share of the profiled step. One
// run at a time, chosen above the table among the runs that have a profile; every column sorts; "Export
// CSV…" writes the chosen run's whole table.
class TopKernelsPanel : public QWidget {
    Q_OBJECT

public:
    explicit TopKernelsPanel(QWidget* parent = nullptr);

    void setRecords(const std::vector<RunRecord>& records);

    // The chosen run's table as CSV (core's kernel_profile_csv_text), written atomically; false with the
    // reason in `error` when nothing is chosen or the file cannot be written.
    bool exportCsv(const QString& path, QString* error) const;

    QComboBox* runChooser() const { return run_; }
    QTableView* view() const { return view_; }
    QLabel* caption() const { return caption_; }

private:
    void showChosen();

    std::vector<RunRecord> profiled_;  // the records that have a profile, in the runs' order
    QComboBox* run_;
    QLabel* caption_;
    QPushButton* export_;
    QStandardItemModel* model_;
    QSortFilterProxyModel* sorted_;
    QTableView* view_;
};

}  // namespace tewb::ui

#pragma once

#include <vector>

#include <QAbstractTableModel>

#include "core/results/RunStore.h"

namespace tewb::ui {

// The run store's list of past runs, newest first. Columns sort by SortRole: numbers as numbers (median ms,
// final loss, peak memory, steps; a missing value below every value), so the order matches the indicator.
class HistoryModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column { Id, Created, Name, Backend, Precision, Device, Status, Steps, MedianMs, FinalLoss, PeakMemory, ColumnCount };
    static constexpr int StoreIdRole = Qt::UserRole + 1;
    static constexpr int SortRole = Qt::UserRole + 2;

    explicit HistoryModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    void setRuns(std::vector<StoredRun> runs);
    const std::vector<StoredRun>& runs() const { return runs_; }

private:
    QVariant sortValue(const QModelIndex& index) const;

    std::vector<StoredRun> runs_;
};

}  // namespace tewb::ui

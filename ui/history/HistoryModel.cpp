#include "ui/history/HistoryModel.h"

#include <limits>

#include "core/common/TextTable.h"
#include "core/results/RunRecord.h"

namespace tewb::ui {

HistoryModel::HistoryModel(QObject* parent) : QAbstractTableModel(parent) {}

int HistoryModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(runs_.size());
}

int HistoryModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

void HistoryModel::setRuns(std::vector<StoredRun> runs) {
    beginResetModel();
    runs_ = std::move(runs);
    endResetModel();
}

QVariant HistoryModel::sortValue(const QModelIndex& index) const {
    const StoredRun& r = runs_[static_cast<std::size_t>(index.row())];
    // A missing number sorts below every number (a run that stopped before its timed steps).
    const auto number = [](const std::optional<double>& v) { return v ? *v : -std::numeric_limits<double>::infinity(); };
    switch (index.column()) {
        case Id: return QVariant::fromValue<qint64>(r.id);
        case Steps: return r.steps;
        case MedianMs: return number(r.median_ms);
        case FinalLoss: return number(r.final_loss);
        case PeakMemory: return QVariant::fromValue<qulonglong>(r.peak_mem_bytes);
        default: return data(index, Qt::DisplayRole);
    }
}

QVariant HistoryModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const StoredRun& r = runs_[static_cast<std::size_t>(index.row())];
    if (role == StoreIdRole) return QVariant::fromValue<qint64>(r.id);
    if (role == SortRole) return sortValue(index);
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
            case Id: return QVariant::fromValue<qint64>(r.id);
            case Created: return QString::fromStdString(r.created_at);
            case Name: return QString::fromStdString(display_name(r));
            case Backend: return QString::fromStdString(r.backend);
            case Precision: return QString::fromStdString(precision_label(r.precision, r.fp8_emulated));
            case Device: return QString::fromStdString(r.device);
            case Status: return QString::fromStdString(r.status);
            case Steps: return r.steps;
            case MedianMs: return QString::fromStdString(format_fixed(r.median_ms, 2));
            case FinalLoss: return QString::fromStdString(format_fixed(r.final_loss, 4));
            case PeakMemory: return r.peak_mem_bytes ? QString::fromStdString(format_bytes(r.peak_mem_bytes)) : QStringLiteral("–");
            default: return {};
        }
    }
    if (role == Qt::ToolTipRole && index.column() == Name) {
        return tr("%1\n%2 %3 on %4, %n step(s), %5", nullptr, r.steps)
            .arg(QString::fromStdString(display_name(r)), QString::fromStdString(r.backend),
                 QString::fromStdString(precision_label(r.precision, r.fp8_emulated)), QString::fromStdString(r.device),
                 QString::fromStdString(r.status));
    }
    if (role == Qt::TextAlignmentRole && (index.column() == Id || index.column() >= Steps)) {
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    }
    return {};
}

QVariant HistoryModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
        case Id: return tr("#");
        case Created: return tr("Created (UTC)");
        case Name: return tr("Name");
        case Backend: return tr("Backend");
        case Precision: return tr("Precision");
        case Device: return tr("Device");
        case Status: return tr("Status");
        case Steps: return tr("Steps");
        case MedianMs: return tr("Median ms");
        case FinalLoss: return tr("Final loss");
        case PeakMemory: return tr("Peak memory");
        default: return {};
    }
}

}  // namespace tewb::ui

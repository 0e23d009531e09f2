#include "ui/runs/RunQueueModel.h"

#include <algorithm>

#include "core/results/AtomicFile.h"

namespace tewb::ui {

namespace {

QString setupText(const RunConfig& c) {
    QString text = QStringLiteral("%1 %2 %3 · %4×%5, batch %6")
                       .arg(QString::fromUtf8(to_string(c.backend).data()), QString::fromUtf8(to_string(c.precision).data()),
                            QString::fromUtf8(to_string(c.device).data()))
                       .arg(c.model.layers)
                       .arg(c.model.hidden)
                       .arg(c.batch);
    // What a gpt on synthetic tokens leaves unsaid: the llama and its key/value heads, the token file.
    if (c.model.arch == Arch::Llama) text += QStringLiteral(" · llama, %1 KV heads").arg(effective_kv_heads(c.model));
    if (c.data.from_file()) {
        const std::size_t slash = c.data.path.find_last_of('/');
        text += QStringLiteral(" · ") + QString::fromStdString(slash == std::string::npos ? c.data.path : c.data.path.substr(slash + 1));
    }
    return text;
}

}  // namespace

RunQueueModel::RunQueueModel(QObject* parent) : QAbstractTableModel(parent) {}

QString RunQueueModel::durationText(double ms) {
    const auto seconds = static_cast<long long>(ms / 1000.0 + 0.5);
    if (seconds < 60) return QStringLiteral("%1 s").arg(seconds);
    if (seconds < 3600) return QStringLiteral("%1 min %2 s").arg(seconds / 60).arg(seconds % 60);
    return QStringLiteral("%1 h %2 min").arg(seconds / 3600).arg((seconds % 3600) / 60);
}

int RunQueueModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(items_.size());
}

int RunQueueModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QString RunQueueModel::toText(State state) {
    switch (state) {
        case State::Queued: return tr("queued");
        case State::Running: return tr("running");
        case State::Finished: return tr("finished");
        case State::Cancelled: return tr("cancelled");
        case State::Failed: return tr("failed");
        case State::Skipped: return tr("not run here");
    }
    return {};
}

QVariant RunQueueModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const Item& it = items_[static_cast<std::size_t>(index.row())];
    const int total = it.config.total_steps();
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
            case Name: {
                QString name = QString::fromStdString(display_name(it.config, it.fp8_emulated));
                if (!it.sweep.isEmpty()) name = tr("%1 · %2").arg(it.sweep, name);
                return it.repeat ? tr("%1 #%2/%3").arg(name).arg(it.repeat->index).arg(it.repeat->count) : name;
            }
            case Setup: return setupText(it.config);
            case Status: return toText(it.state);
            case Progress: return tr("%1 of %2").arg(it.step).arg(total);
            case Elapsed: return it.state == State::Queued || it.state == State::Skipped ? QString() : durationText(it.elapsed_ms);
            case Eta:
                return it.state == State::Running && it.eta_ms ? durationText(*it.eta_ms) : QString();
            default: return {};
        }
    }
    if (role == ProgressRole && index.column() == Progress) {
        return total > 0 ? static_cast<double>(it.step) / total : 0.0;
    }
    if (role == Qt::ToolTipRole) {
        // Narrow columns elide; the whole text is one hover away.
        if (!it.message.isEmpty()) return it.message;
        if (index.column() == Name) return data(index, Qt::DisplayRole).toString() + QLatin1Char('\n') + setupText(it.config);
        if (index.column() == Setup) return data(index, Qt::DisplayRole);
        return {};
    }
    if (role == Qt::TextAlignmentRole && (index.column() == Elapsed || index.column() == Eta)) {
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    }
    return {};
}

QVariant RunQueueModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
        case Name: return tr("Run");
        case Setup: return tr("Setup");
        case Status: return tr("Status");
        case Progress: return tr("Step");
        case Elapsed: return tr("Elapsed");
        case Eta: return tr("ETA");
        default: return {};
    }
}

int RunQueueModel::append(const RunConfig& config, State state, const QString& message, std::optional<RepeatInfo> repeat,
                          bool fp8_emulated, const QString& sweep) {
    if (config.data.from_file()) protect_training_data(config.data.path);  // no export may write over it
    const int row = static_cast<int>(items_.size());
    beginInsertRows({}, row, row);
    Item item;
    item.ticket = nextTicket_++;
    item.config = config;
    item.state = state;
    item.message = message;
    item.repeat = std::move(repeat);
    item.fp8_emulated = fp8_emulated;
    item.sweep = sweep;
    items_.push_back(std::move(item));
    endInsertRows();
    return items_.back().ticket;
}

int RunQueueModel::appendResolved(const ResolvedRun& run, std::optional<RepeatInfo> repeat, const QString& sweep) {
    const int ticket = append(run.config, State::Queued, {}, std::move(repeat), run.facts.fp8_emulated, sweep);
    items_.back().resolved = run;
    return ticket;
}

const RunQueueModel::Item* RunQueueModel::item(int ticket) const {
    const int row = rowOf(ticket);
    return row < 0 ? nullptr : &items_[static_cast<std::size_t>(row)];
}

std::optional<int> RunQueueModel::nextQueued() const {
    for (const Item& it : items_) {
        if (it.state == State::Queued) return it.ticket;
    }
    return std::nullopt;
}

void RunQueueModel::setState(int ticket, State state, const QString& message) {
    const int row = rowOf(ticket);
    if (row < 0) return;
    Item& it = items_[static_cast<std::size_t>(row)];
    it.state = state;
    if (!message.isEmpty()) it.message = message;
    if (state != State::Running) it.eta_ms.reset();
    changed(row);
}

void RunQueueModel::setRunKey(int ticket, int run_key) {
    const int row = rowOf(ticket);
    if (row >= 0) items_[static_cast<std::size_t>(row)].run_key = run_key;
}

void RunQueueModel::setProgress(int ticket, int step, double elapsed_ms) {
    const int row = rowOf(ticket);
    if (row < 0) return;
    Item& it = items_[static_cast<std::size_t>(row)];
    it.step = step;
    it.elapsed_ms = elapsed_ms;
    const int total = it.config.total_steps();
    if (step > 0) {
        it.eta_ms = elapsed_ms / step * std::max(0, total - step);
    }
    changed(row);
}

void RunQueueModel::removeDone() {
    for (int row = rowCount() - 1; row >= 0; --row) {
        const State s = items_[static_cast<std::size_t>(row)].state;
        if (s != State::Queued && s != State::Running) {
            beginRemoveRows({}, row, row);
            items_.erase(items_.begin() + row);
            endRemoveRows();
        }
    }
}

void RunQueueModel::removeQueued() {
    for (int row = rowCount() - 1; row >= 0; --row) {
        if (items_[static_cast<std::size_t>(row)].state == State::Queued) {
            beginRemoveRows({}, row, row);
            items_.erase(items_.begin() + row);
            endRemoveRows();
        }
    }
}

int RunQueueModel::rowOf(int ticket) const {
    const auto it = std::find_if(items_.begin(), items_.end(), [ticket](const Item& i) { return i.ticket == ticket; });
    return it == items_.end() ? -1 : static_cast<int>(it - items_.begin());
}

void RunQueueModel::changed(int row) {
    Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
}

}  // namespace tewb::ui

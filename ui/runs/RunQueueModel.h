#pragma once

#include <optional>
#include <vector>

#include <QAbstractTableModel>
#include <QString>

#include "core/config/RunConfig.h"
#include "core/results/RunRecord.h"
#include "core/train/ResolvedRun.h"

namespace tewb::ui {

// The run queue: configurations waiting, the one running with its progress, and what became of the
// others. Rows are only appended or removed; a row's ticket identifies it for its whole life.
class RunQueueModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum class State { Queued, Running, Finished, Cancelled, Failed, Skipped };
    enum Column { Name, Status, Progress, Elapsed, Eta, Setup, ColumnCount };
    static constexpr int ProgressRole = Qt::UserRole + 1;  // 0..1 in the Progress column

    struct Item {
        int ticket = 0;
        RunConfig config;
        State state = State::Queued;
        int step = 0;
        double elapsed_ms = 0;
        std::optional<double> eta_ms;
        QString message;  // why it was skipped or failed, or where it was saved
        int run_key = 0;  // its key in the RunCollection once it started
        std::optional<RepeatInfo> repeat;  // one of several repeats of this configuration
        bool fp8_emulated = false;  // its RunFacts: FP8 GEMMs emulated, said in its name before it runs
        // A queued run as enqueueing decided it on this machine, once: the worker and the trainer take it.
        std::optional<ResolvedRun> resolved;
        QString sweep;  // the sweep it belongs to ("Sweep 1"): its run goes to the Sweep tab, not the dashboard
    };

    explicit RunQueueModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    int append(const RunConfig& config, State state = State::Queued, const QString& message = {},
               std::optional<RepeatInfo> repeat = std::nullopt, bool fp8_emulated = false, const QString& sweep = {});
    // A run to start: its configuration, FP8 emulation and the rest as `run` decided them.
    int appendResolved(const ResolvedRun& run, std::optional<RepeatInfo> repeat = std::nullopt, const QString& sweep = {});
    const Item* item(int ticket) const;
    const std::vector<Item>& items() const { return items_; }
    std::optional<int> nextQueued() const;
    bool hasQueued() const { return nextQueued().has_value(); }

    void setState(int ticket, State state, const QString& message = {});
    void setRunKey(int ticket, int run_key);
    void setProgress(int ticket, int step, double elapsed_ms);
    // Removes every row that is not queued or running.
    void removeDone();
    // Removes every queued row.
    void removeQueued();

    static QString toText(State state);
    static QString durationText(double ms);

private:
    int rowOf(int ticket) const;
    void changed(int row);

    std::vector<Item> items_;
    int nextTicket_ = 1;
};

}  // namespace tewb::ui

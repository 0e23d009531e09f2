#pragma once

#include <atomic>
#include <functional>

#include <QObject>
#include <QString>

#include "core/device/DeviceInfo.h"
#include "core/train/Trainer.h"
#include "ui/common/Metatypes.h"

namespace tewb::ui {

// Lives on the run thread and calls core's trainer there; nothing it does touches a widget. Steps and
// results leave as queued signals carrying core's value types. The finished record (finished, cancelled
// or failed) is saved to the run store from this thread, so a slow disk never stalls the window.
class RunWorker : public QObject {
    Q_OBJECT

public:
    using TrainFunction =
        std::function<RunRecord(const ResolvedRun&, const TrainerCallbacks&, const std::atomic<bool>*)>;

    // `train` defaults to core's Trainer for `device`; tests may pass their own. A data-parallel
    // configuration (config.dist) runs through core's run_data_parallel_job, as `te-bench run --nproc N`
    // does: the 1-process run its scaling is measured against is trained here with `train` and appears as it
    // ends (extraRunEnded), then the job's ranks run as te-bench processes (its ranks cannot live in this
    // process) and the job appears when it ends (runEnded without runStarted); a cancel reaches the ranks as
    // SIGINT. `te_bench` overrides where te-bench is (else $TEWB_TE_BENCH, else next to this program, else
    // on PATH).
    explicit RunWorker(DeviceInfo device, TrainFunction train = {}, QString te_bench = {});

    // Thread-safe: the running run stops within one step.
    void cancel() { cancel_.store(true); }
    // Called before each run is handed over, so a cancel that arrives before the run begins still counts.
    void rearm() { cancel_.store(false); }
    // Thread-safe: the runs that start from now on trace one more step after their timed ones (te-bench's
    // --profile) to a file in traces/ beside the run store, and their records get the top-kernels table.
    void setTraceRuns(bool on) { traceRuns_.store(on); }

public Q_SLOTS:
    // `run` as the queue resolved it (nothing is decided again); `repeat` goes into the record (its header too,
    // so live repeats group at once).
    void runOne(int ticket, tewb::ResolvedRun run, std::optional<tewb::RepeatInfo> repeat = std::nullopt);

Q_SIGNALS:
    void runStarted(int ticket, tewb::RunRecord header);
    void stepDone(int ticket, tewb::StepMetrics step);
    // storeId < 0 when saving failed; storeError then says why and where the record was kept instead.
    void runEnded(int ticket, tewb::RunRecord record, qint64 storeId, QString storeError);
    // The configuration could not start (core's ConfigError or another error before the first step).
    void runRefused(int ticket, QString message);
    // A run that came with the ticket's run, not queued itself: a job's 1-process reference run.
    void extraRunEnded(tewb::RunRecord record, qint64 storeId);

private:
    void runJob(int ticket, const ResolvedRun& run);
    QString rankProgram() const;
    static std::string trace_path(int ticket);

    DeviceInfo device_;
    QString teBench_;
    TrainFunction train_;
    std::atomic<bool> cancel_{false};
    std::atomic<bool> traceRuns_{false};
};

}  // namespace tewb::ui

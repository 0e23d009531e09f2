#pragma once

#include <map>
#include <optional>

#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <QThread>

#include "core/device/DeviceInfo.h"
#include "ui/runs/RunCollection.h"
#include "ui/runs/RunQueueModel.h"
#include "ui/runs/RunWorker.h"

namespace tewb::ui {

// Runs the queue one configuration at a time on a run thread (a RunWorker), feeds the RunCollection as
// steps arrive and keeps the queue's states and progress. Lives on the GUI thread. A sweep's runs go to a
// collection of their own (sweepRuns), so a sweep of a dozen sizes does not flood the dashboard.
class RunController : public QObject {
    Q_OBJECT

public:
    RunController(RunCollection* runs, QObject* parent = nullptr);
    ~RunController() override;

    // Runs cannot start before the device is known. `train` replaces core's trainer (tests).
    void setDevice(const DeviceInfo& device, RunWorker::TrainFunction train = {});
    bool hasDevice() const { return device_.has_value(); }

    RunQueueModel* queue() { return &queue_; }
    // The runs of the sweeps queued with enqueue(…, sweep), each entry named after its sweep.
    RunCollection* sweepRuns() { return &sweepRuns_; }

    // Resolves `config` for this machine (core's rules) and queues it; returns core's message when it
    // cannot run here, and queues nothing then.
    // With `repeats` > 1 it queues that many runs of it, one repeat group. With `sweep` (the sweep's name)
    // its run goes to sweepRuns() instead of the dashboard's collection.
    std::optional<QString> enqueue(const RunConfig& config, int repeats = 1, const QString& sweep = {});
    // Queues core's comparison plan for `base`: the baseline and every variant; rows this machine cannot
    // run are listed as "not run here" with the reason. Returns core's message when `base` is invalid.
    // With `repeats` > 1 every row runs that many times, alternating rows (A B A B …), one group per row.
    std::optional<QString> enqueueComparison(const RunConfig& base, int repeats = 1);

    // Whether the runs that start from now on trace one step (RunWorker::setTraceRuns).
    void setTraceRuns(bool on);
    bool traceRuns() const { return traceRuns_; }

    void start();
    // Stops the running run within one step; what is still queued stays queued.
    void cancel();
    // Cancels, drops the queue and joins the run thread. Finished runs are already saved.
    void shutdown();
    bool isRunning() const { return current_.has_value(); }

Q_SIGNALS:
    void runningChanged(bool running);
    void runSaved(qint64 storeId);
    // A run failed or could not start, or its record could not be saved: core's message.
    void runProblem(QString message);
    // A run ended but is not in the run store: why, and the JSON file it was kept in (SaveResult).
    void runNotSaved(QString message);
    void queueDrained();
    void progressText(QString text);

private:
    void startNext();
    void onStarted(int ticket, const RunRecord& header);
    void onStep(int ticket, const StepMetrics& step);
    void onEnded(int ticket, RunRecord record, qint64 storeId, const QString& storeError);
    void onRefused(int ticket, const QString& message);
    void finishCurrent();
    RunCollection* collectionOf(const RunQueueModel::Item& item);
    // The names of the dashboard's runs and of every queued item: a new run's name is made distinct from them.
    std::vector<std::string> takenNames() const;

    RunCollection* runs_;
    RunCollection sweepRuns_;
    RunQueueModel queue_;
    std::optional<DeviceInfo> device_;
    QThread thread_;
    RunWorker* worker_ = nullptr;
    std::optional<int> current_;
    QElapsedTimer clock_;
    bool stopAfterCurrent_ = false;
    bool traceRuns_ = false;
};

}  // namespace tewb::ui

#include "ui/runs/RunController.h"

#include "core/results/RunGroups.h"

#include "core/common/Error.h"
#include "core/config/ComparePlan.h"
#include "core/config/RunFacts.h"
#include "core/config/RunNames.h"

namespace tewb::ui {

RunController::RunController(RunCollection* runs, QObject* parent) : QObject(parent), runs_(runs) {
    qRegisterMetaType<tewb::RunConfig>();
    qRegisterMetaType<tewb::StepMetrics>();
    qRegisterMetaType<tewb::RunRecord>();
    thread_.setObjectName(QStringLiteral("run thread"));
}

RunController::~RunController() {
    shutdown();
}

void RunController::setDevice(const DeviceInfo& device, RunWorker::TrainFunction train) {
    if (worker_) return;  // the device does not change under a running queue
    device_ = device;
    worker_ = new RunWorker(device, std::move(train));
    worker_->setTraceRuns(traceRuns_);
    worker_->moveToThread(&thread_);
    connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
    connect(worker_, &RunWorker::runStarted, this, &RunController::onStarted);
    connect(worker_, &RunWorker::stepDone, this, &RunController::onStep);
    connect(worker_, &RunWorker::runEnded, this, &RunController::onEnded);
    connect(worker_, &RunWorker::extraRunEnded, this, [this](RunRecord record, qint64 storeId) {
        runs_->add(std::move(record), storeId >= 0 ? std::optional<std::int64_t>(storeId) : std::nullopt);
        if (storeId >= 0) Q_EMIT runSaved(storeId);
    });
    connect(worker_, &RunWorker::runRefused, this, &RunController::onRefused);
    thread_.start();
}

void RunController::setTraceRuns(bool on) {
    traceRuns_ = on;
    if (worker_) worker_->setTraceRuns(on);
}

namespace {

// Whether a queued run's FP8 GEMMs will be emulated (its RunFacts); a row that cannot run here is not.
bool fp8_emulated_here(const RunConfig& config, const DeviceInfo& device) {
    try {
        return run_facts(config, device).fp8_emulated;
    } catch (const Error&) {
        return false;
    }
}

}  // namespace

std::vector<std::string> RunController::takenNames() const {
    std::vector<std::string> taken;
    for (const RunCollection::Entry& e : runs_->entries()) taken.push_back(e.record.config.name);
    for (const RunQueueModel::Item& item : queue_.items()) taken.push_back(item.config.name);
    return taken;
}

std::optional<QString> RunController::enqueue(const RunConfig& config, int repeats, const QString& sweep) {
    if (!device_) return tr("The device is still being detected; try again in a moment.");
    if (repeats < 1 || repeats > kMaxRepeats) return tr("Repeats %1: allowed: 1 to %2").arg(repeats).arg(kMaxRepeats);
    try {
        ResolvedRun run = resolve_run(config, *device_);
        // A sweep's runs are named by their size, in a collection of their own; the repeats below share one name.
        if (sweep.isEmpty()) run.config.name = distinct_name(run.config.name, takenNames());
        const std::string group = repeats > 1 ? make_run_id() : std::string();
        for (int r = 1; r <= repeats; ++r) {
            queue_.appendResolved(run, repeats > 1 ? std::optional<RepeatInfo>(RepeatInfo{group, r, repeats}) : std::nullopt,
                                  sweep);
        }
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
    return std::nullopt;
}

std::optional<QString> RunController::enqueueComparison(const RunConfig& base, int repeats) {
    if (!device_) return tr("The device is still being detected; try again in a moment.");
    if (repeats < 1 || repeats > kMaxRepeats) return tr("Repeats %1: allowed: 1 to %2").arg(repeats).arg(kMaxRepeats);
    try {
        const std::vector<PlannedRun> plan = plan_comparison(base, *device_);
        std::vector<ResolvedRun> runnable;
        std::vector<std::string> taken = takenNames();
        for (PlannedRun row : plan) {
            row.config.name = distinct_name(row.config.name, taken);
            taken.push_back(row.config.name);
            if (row.skip_reason) {
                queue_.append(row.config, RunQueueModel::State::Skipped, QString::fromStdString(*row.skip_reason), std::nullopt,
                              fp8_emulated_here(row.config, *device_));
            } else {
                runnable.push_back(resolve_run(row.config, *device_));
            }
        }
        std::vector<std::string> groups;
        for (std::size_t i = 0; i < runnable.size(); ++i) groups.push_back(repeats > 1 ? make_run_id() : std::string());
        for (const auto& [index, repeat] : alternating_order(runnable.size(), repeats)) {
            queue_.appendResolved(runnable[index], repeats > 1 ? std::optional<RepeatInfo>(RepeatInfo{groups[index], repeat, repeats})
                                                               : std::nullopt);
        }
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
    return std::nullopt;
}

void RunController::start() {
    stopAfterCurrent_ = false;
    if (!current_) startNext();
}

void RunController::cancel() {
    stopAfterCurrent_ = true;
    if (current_ && worker_) worker_->cancel();
}

void RunController::shutdown() {
    cancel();
    queue_.removeQueued();
    // Signals still queued from the run thread would reach a half-destroyed window; drop them.
    if (worker_) QObject::disconnect(worker_, nullptr, this, nullptr);
    if (thread_.isRunning()) {
        thread_.quit();
        thread_.wait();  // the worker is deleted as the thread finishes
    }
    worker_ = nullptr;
    if (current_) {
        queue_.setState(*current_, RunQueueModel::State::Cancelled, tr("cancelled: the window was closed"));
        current_.reset();
    }
}

void RunController::startNext() {
    if (stopAfterCurrent_ || !worker_ || !thread_.isRunning()) return;
    const std::optional<int> ticket = queue_.nextQueued();
    if (!ticket) {
        Q_EMIT runningChanged(false);
        Q_EMIT queueDrained();
        return;
    }
    current_ = ticket;
    queue_.setState(*ticket, RunQueueModel::State::Running);
    clock_.start();
    Q_EMIT runningChanged(true);
    Q_EMIT progressText(tr("Starting %1…").arg(QString::fromStdString(queue_.item(*ticket)->config.name)));
    const RunQueueModel::Item& item = *queue_.item(*ticket);
    if (!item.resolved) {  // appended without its resolution (only a queue built by hand): nothing decided, nothing run
        onRefused(*ticket, tr("not resolved for this machine when it was queued"));
        return;
    }
    const ResolvedRun run = *item.resolved;
    const std::optional<RepeatInfo> repeat = item.repeat;
    worker_->rearm();
    QMetaObject::invokeMethod(worker_, [worker = worker_, t = *ticket, run, repeat] { worker->runOne(t, run, repeat); },
                              Qt::QueuedConnection);
}

RunCollection* RunController::collectionOf(const RunQueueModel::Item& item) {
    return item.sweep.isEmpty() ? runs_ : &sweepRuns_;
}

void RunController::onStarted(int ticket, const RunRecord& header) {
    const RunQueueModel::Item* item = queue_.item(ticket);
    if (!item || item->run_key != 0) return;  // a failure before the first step reports its header again
    queue_.setRunKey(ticket, collectionOf(*item)->add(header, std::nullopt, item->sweep));
}

void RunController::onStep(int ticket, const StepMetrics& step) {
    const RunQueueModel::Item* item = queue_.item(ticket);
    if (!item) return;
    collectionOf(*item)->appendStep(item->run_key, step);
    queue_.setProgress(ticket, step.step, static_cast<double>(clock_.elapsed()));
    const RunQueueModel::Item* now = queue_.item(ticket);
    Q_EMIT progressText(tr("Running %1: step %2 of %3, ETA %4")
                            .arg(QString::fromStdString(now->config.name))
                            .arg(step.step)
                            .arg(now->config.total_steps())
                            .arg(RunQueueModel::durationText(now->eta_ms.value_or(0))));
}

void RunController::onEnded(int ticket, RunRecord record, qint64 storeId, const QString& storeError) {
    const RunQueueModel::Item* item = queue_.item(ticket);
    if (!item) return;
    const RunStatus status = record.status;
    const QString message = QString::fromStdString(record.message);
    const int steps = static_cast<int>(record.steps.size());
    RunCollection* runs = collectionOf(*item);
    if (item->run_key == 0) queue_.setRunKey(ticket, runs->add(record, std::nullopt, item->sweep));
    runs->finish(queue_.item(ticket)->run_key, std::move(record),
                 storeId >= 0 ? std::optional<std::int64_t>(storeId) : std::nullopt);
    queue_.setProgress(ticket, steps, static_cast<double>(clock_.elapsed()));
    switch (status) {
        case RunStatus::Finished:
            queue_.setState(ticket, RunQueueModel::State::Finished,
                            storeId >= 0 ? tr("saved as run %1").arg(storeId) : tr("NOT SAVED: %1").arg(storeError));
            break;
        case RunStatus::Cancelled: queue_.setState(ticket, RunQueueModel::State::Cancelled, tr("cancelled")); break;
        case RunStatus::Failed:
        case RunStatus::Running:
            queue_.setState(ticket, RunQueueModel::State::Failed, message);
            Q_EMIT runProblem(message);
            break;
    }
    if (storeId >= 0) {
        Q_EMIT runSaved(storeId);
    } else if (!storeError.isEmpty()) {
        Q_EMIT runNotSaved(tr("The run ended but is not in the history: %1").arg(storeError));
    }
    finishCurrent();
}

void RunController::onRefused(int ticket, const QString& message) {
    queue_.setState(ticket, RunQueueModel::State::Failed, message);
    Q_EMIT runProblem(message);
    finishCurrent();
}

void RunController::finishCurrent() {
    current_.reset();
    if (stopAfterCurrent_) {
        Q_EMIT runningChanged(false);
        Q_EMIT progressText(tr("Stopped"));
        return;
    }
    startNext();
}

}  // namespace tewb::ui

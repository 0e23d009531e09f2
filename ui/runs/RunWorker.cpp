#include "ui/runs/RunWorker.h"

#include <exception>
#include <filesystem>

#include <QCoreApplication>
#include <QDateTime>
#include <QFileInfo>
#include <QStandardPaths>

#include "core/common/Error.h"
#include "core/common/TextCheck.h"
#include "core/results/ReportText.h"
#include "core/results/RunStore.h"
#include "core/train/CpuThreads.h"
#include "core/train/DataParallelJob.h"

namespace tewb::ui {

RunWorker::RunWorker(DeviceInfo device, TrainFunction train, QString te_bench)
    : device_(device), teBench_(std::move(te_bench)), train_(std::move(train)) {
    if (teBench_.isEmpty()) teBench_ = qEnvironmentVariable("TEWB_TE_BENCH");
    if (teBench_.isEmpty()) {
        const QString beside = QCoreApplication::applicationDirPath() + QStringLiteral("/te-bench");
        teBench_ = QFileInfo(beside).isExecutable() ? beside : QStringLiteral("te-bench");
    }
    if (!train_) {
        train_ = [trainer = Trainer(std::move(device))](const ResolvedRun& run, const TrainerCallbacks& callbacks,
                                                        const std::atomic<bool>* cancel) {
            return trainer.run(run, callbacks, cancel);
        };
    }
}

// te-bench's path for the job's ranks (each rank is `te-bench run …`): the one given, found on PATH when it
// names no folder. Empty when there is no such program.
QString RunWorker::rankProgram() const {
    const QString program = teBench_.contains(QLatin1Char('/')) ? teBench_ : QStandardPaths::findExecutable(teBench_);
    if (program.isEmpty() || !QFileInfo(program).isExecutable() || QFileInfo(program).isDir()) return {};
    return QFileInfo(program).absoluteFilePath();
}

void RunWorker::runJob(int ticket, const ResolvedRun& run) {
    const RunConfig& config = run.config;
    RunRecord header;
    try {
        header = make_run_header(run, device_);
    } catch (const std::exception& e) {
        Q_EMIT runRefused(ticket, QString::fromStdString(without_stack_frames(e.what())));
        return;
    }
    const QString program = rankProgram();
    if (program.isEmpty()) {
        Q_EMIT runRefused(ticket, tr("cannot start %1 for the data-parallel job: no such program").arg(teBench_));
        return;
    }
    // No runStarted: the 1-process reference run enters the window as it ends (extraRunEnded, so that it comes
    // first, as the baseline), the job when it ends; the queue shows the job running meanwhile.
    DataParallelJobRequest request;
    request.config = config;
    request.ranks = rank_command(config, program.toStdString());
    request.ranks.output = "/dev/null";  // the ranks' progress lines are for a terminal; the window shows the record
    DataParallelJobHooks hooks;
    hooks.train_reference = [this](const RunConfig& single) {
        set_cpu_threads(hardware_threads() - 1);  // as every run in this process (runOne says why)
        return train_(resolve_run(single, device_), TrainerCallbacks{}, &cancel_);
    };
    hooks.reference_ended = [this](const RunRecord& reference) {
        const SaveResult saved = save_run(RunStore::default_path(), reference);
        Q_EMIT extraRunEnded(reference, saved.id.value_or(-1));
    };
    RunRecord job;
    try {
        const DataParallelJobResult result = run_data_parallel_job(request, device_, hooks, cancel_);
        if (result.job) {
            job = *result.job;
        } else {  // cancelled during the reference run: the ranks never started
            job = header;
            job.status = RunStatus::Cancelled;
        }
    } catch (const std::exception& e) {  // the job could not be set up, or its reference run could not start
        job = header;
        mark_failed(job, ErrorKind::Distributed, without_stack_frames(e.what()));
    }
    const SaveResult saved = save_run(RunStore::default_path(), job);
    Q_EMIT runEnded(ticket, std::move(job), saved.id.value_or(-1),
                    saved.id ? QString() : QString::fromStdString(saved.failure_message()));
}

// traces/trace-<UTC time>-<ticket>.json beside the run store. A folder that cannot be made leaves the path
// as it is: the trainer then keeps the run and records why the trace was not written.
std::string RunWorker::trace_path(int ticket) {
    std::filesystem::path folder;
    try {
        folder = RunStore::default_path().parent_path() / "traces";
    } catch (const std::exception&) {
        folder = std::filesystem::temp_directory_path();
    }
    std::error_code ignored;
    std::filesystem::create_directories(folder, ignored);
    const QString name = QStringLiteral("trace-%1-%2.json")
                             .arg(QDateTime::currentDateTimeUtc().toString(QStringLiteral("yyyyMMdd-HHmmss-zzz")))
                             .arg(ticket);
    return (folder / name.toStdString()).string();
}

void RunWorker::runOne(int ticket, tewb::ResolvedRun run, std::optional<tewb::RepeatInfo> repeat) {
    if (run.config.dist.enabled()) {
        runJob(ticket, run);
        return;
    }
    // A CPU run leaves one hardware thread to the window: with every core busy in LibTorch's threads
    // the GUI thread waits for a time slice and stalls for tens of milliseconds (measured in
    // tst_workbench). GPU runs barely use CPU threads.
    set_cpu_threads(hardware_threads() - 1);
    TrainerCallbacks callbacks;
    callbacks.on_start = [this, ticket, repeat](const RunRecord& header) {
        RunRecord withRepeat = header;
        withRepeat.repeat = repeat;
        Q_EMIT runStarted(ticket, withRepeat);
    };
    callbacks.on_step = [this, ticket](const StepMetrics& step) { Q_EMIT stepDone(ticket, step); };
    if (traceRuns_.load()) callbacks.profile_trace = trace_path(ticket);
    RunRecord record;
    try {
        record = train_(run, callbacks, &cancel_);
    } catch (const std::exception& e) {
        Q_EMIT runRefused(ticket, QString::fromStdString(without_stack_frames(e.what())));
        return;
    }
    record.repeat = repeat;
    const SaveResult saved = save_run(RunStore::default_path(), record);
    Q_EMIT runEnded(ticket, std::move(record), saved.id.value_or(-1),
                    saved.id ? QString() : QString::fromStdString(saved.failure_message()));
}

}  // namespace tewb::ui

#include "ui/runs/RunWorker.h"

#include <csignal>
#include <exception>
#include <filesystem>

#include <QCoreApplication>
#include <QDateTime>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>

#include "core/common/Error.h"
#include "core/results/RecordJson.h"
#include "core/results/ReportText.h"
#include "core/results/RunStore.h"
#include "core/train/CpuThreads.h"

namespace tewb::ui {

RunWorker::RunWorker(DeviceInfo device, TrainFunction train, QString te_bench)
    : device_(device), teBench_(std::move(te_bench)), train_(std::move(train)) {
    if (teBench_.isEmpty()) teBench_ = qEnvironmentVariable("TEWB_TE_BENCH");
    if (teBench_.isEmpty()) {
        const QString beside = QCoreApplication::applicationDirPath() + QStringLiteral("/te-bench");
        teBench_ = QFileInfo(beside).isExecutable() ? beside : QStringLiteral("te-bench");
    }
    if (!train_) {
        train_ = [trainer = Trainer(std::move(device))](const RunConfig& config, const TrainerCallbacks& callbacks,
                                                        const std::atomic<bool>* cancel) {
            return trainer.run(config, callbacks, cancel);
        };
    }
}

void RunWorker::runJob(int ticket, const RunConfig& config) {
    RunRecord header;
    try {
        header = make_run_header(resolve(config, device_), device_);
    } catch (const std::exception& e) {
        Q_EMIT runRefused(ticket, QString::fromStdString(e.what()));
        return;
    }
    // No runStarted: the job enters the window when it ends, after its 1-process reference run (so that the
    // reference comes first, as the baseline), and the queue shows it running meanwhile.
    QTemporaryDir dir;
    const QString output = dir.filePath(QStringLiteral("job.json"));
    QStringList args;
    for (const std::string& word : command_arguments_for(config)) args << QString::fromStdString(word);
    args << QStringLiteral("--no-store") << QStringLiteral("--json") << output;
    QProcess process;
    process.setProgram(teBench_);
    process.setArguments(args);
    process.setProcessChannelMode(QProcess::SeparateChannels);
    process.start();
    if (!process.waitForStarted(30000)) {
        Q_EMIT runRefused(ticket, tr("cannot start %1 for the data-parallel job: %2").arg(teBench_, process.errorString()));
        return;
    }
    bool interrupted = false;
    while (!process.waitForFinished(100)) {
        if (cancel_.load() && !interrupted) {
            ::kill(static_cast<pid_t>(process.processId()), SIGINT);  // te-bench passes it on to every rank
            interrupted = true;
        }
    }
    std::vector<RunRecord> records;
    try {
        records = read_record_files(output.toStdString());
    } catch (const std::exception&) {
    }
    if (records.empty()) {
        RunRecord failed = header;
        const QStringList lines = QString::fromUtf8(process.readAllStandardError()).split('\n', Qt::SkipEmptyParts);
        mark_failed(failed, ErrorKind::Distributed,
                    (lines.isEmpty() ? tr("te-bench ended with status %1 and left no record").arg(process.exitCode())
                                     : lines.last())
                        .toStdString());
        records.push_back(failed);
    }
    for (std::size_t i = 0; i + 1 < records.size(); ++i) {  // the 1-process reference run comes first
        const SaveResult saved = save_run(RunStore::default_path(), records[i]);
        Q_EMIT extraRunEnded(records[i], saved.id.value_or(-1));
    }
    RunRecord job = records.back();
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

void RunWorker::runOne(int ticket, tewb::RunConfig config, std::optional<tewb::RepeatInfo> repeat) {
    if (config.dist.enabled()) {
        runJob(ticket, config);
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
        record = train_(config, callbacks, &cancel_);
    } catch (const std::exception& e) {
        Q_EMIT runRefused(ticket, QString::fromStdString(e.what()));
        return;
    }
    record.repeat = repeat;
    const SaveResult saved = save_run(RunStore::default_path(), record);
    Q_EMIT runEnded(ticket, std::move(record), saved.id.value_or(-1),
                    saved.id ? QString() : QString::fromStdString(saved.failure_message()));
}

}  // namespace tewb::ui

#include "ui/runs/RunWorker.h"

#include <exception>

#include "core/common/Error.h"
#include "core/results/RunStore.h"
#include "core/train/CpuThreads.h"

namespace tewb::ui {

RunWorker::RunWorker(DeviceInfo device, TrainFunction train) : train_(std::move(train)) {
    if (!train_) {
        train_ = [trainer = Trainer(std::move(device))](const RunConfig& config, const TrainerCallbacks& callbacks,
                                                        const std::atomic<bool>* cancel) {
            return trainer.run(config, callbacks, cancel);
        };
    }
}

void RunWorker::runOne(int ticket, tewb::RunConfig config, std::optional<tewb::RepeatInfo> repeat) {
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

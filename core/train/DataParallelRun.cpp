#include "core/train/DataParallelRun.h"

#include <stdexcept>
#include <string>

#include "core/common/Error.h"
#include "core/dist/DistJob.h"
#include "core/results/Summary.h"

namespace tewb {

RunRecord run_as_rank(const Trainer& trainer, const ResolvedRun& run, const WorkerEnv& env, const TrainerCallbacks& callbacks,
                      const std::atomic<bool>* cancel) {
    if (run.scope != MemoryScope::OneRank || (run.cuda() && run.device_index != env.local_rank)) {
        throw std::invalid_argument("run_as_rank: the run must be resolved for this rank (RunPlace::rank(" +
                                    std::to_string(env.local_rank) + "))");
    }
    std::unique_ptr<DistJob> job;
    try {
        job = join_job(env, run.config, cancel);
    } catch (const DistError& e) {
        RunRecord record = make_run_header(run, trainer.device());
        // Stopped by a signal before the job formed: a cancel, as a single run's would be.
        if (cancel != nullptr && cancel->load()) {
            record.status = RunStatus::Cancelled;
            record.message = e.what();
        } else {
            mark_failed(record, ErrorKind::Distributed, e.what());
        }
        record.summary = summarize(record.steps, record.config, record.execution);
        if (callbacks.on_start) callbacks.on_start(record);
        return record;
    }
    return trainer.run(run, *job, callbacks, cancel);
}

}  // namespace tewb

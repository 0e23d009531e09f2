#include "core/train/DataParallelJob.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include <unistd.h>

#include "core/common/Error.h"
#include "core/results/AtomicFile.h"
#include "core/results/RecordJson.h"
#include "core/results/ReportText.h"
#include "core/results/Summary.h"
#include "core/train/QualityProbe.h"
#include "core/train/Trainer.h"

namespace tewb {

namespace {

void say(const DataParallelJobHooks& hooks, const std::string& line) {
    if (hooks.say) hooks.say(line);
}

// A path no file is at, in the temporary directory ($TMPDIR, else /tmp), for rank 0's record: rank 0 writes it
// atomically, and its absence after the job means rank 0 left no record.
std::string record_path_for_job() {
    std::error_code error;
    const std::filesystem::path directory = std::filesystem::temp_directory_path(error);
    std::string path = ((error ? std::filesystem::path("/tmp") : directory) / "te-bench-job-XXXXXX").string();
    const int fd = ::mkstemp(path.data());
    if (fd < 0) {
        throw DataError("cannot create a temporary file for the job's record in " + path.substr(0, path.rfind('/')) + ": " +
                        std::strerror(errno));
    }
    ::close(fd);
    ::unlink(path.c_str());
    return path;
}

// The job's record: rank 0's, or the job's header when rank 0 left none; failed when the launcher says so, and
// cancelled when a Ctrl-C stopped every rank before rank 0 had a record to leave (they were still starting).
RunRecord job_record(const ResolvedRun& resolved, const DeviceInfo& device, const std::string& record_path,
                     const LocalJobOutcome& outcome, bool cancelled, bool& launcher_failed) {
    RunRecord record;
    std::error_code ignored;
    const bool rank0_reported = std::filesystem::exists(record_path, ignored);
    if (rank0_reported) {
        record = read_record_file(record_path);
        std::filesystem::remove(record_path, ignored);
    } else {
        record = make_run_header(resolved, device);
        if (cancelled && outcome.all_ok()) {
            launcher_failed = false;
            record.status = RunStatus::Cancelled;
            record.message = "cancelled before the job's first step: Ctrl-C (or a stop signal) came while its ranks were starting";
            record.summary = summarize(record.steps, record.config, record.execution);
            return record;
        }
    }
    launcher_failed = !outcome.all_ok() || !rank0_reported;
    if (launcher_failed) {
        // Rank 0's own account of a failure leads (it says what the job was doing); the launcher's, which
        // names the rank that ended first and how, follows. A rank 0 the launcher stopped says nothing more.
        const std::string launcher = outcome.all_ok() ? std::string("rank 0 left no record") : outcome.describe();
        const bool rank0_failed = rank0_reported && record.status == RunStatus::Failed && !record.message.empty();
        mark_failed(record, ErrorKind::Distributed, rank0_failed ? record.message + " (" + launcher + ")" : launcher);
    }
    return record;
}

// The job's scaling efficiency against the 1-process run: its median timed step over the job's, when both
// have one and the job finished. Medians, so a few steps disturbed by the machine do not move it; whether the
// 1-process run was noisy goes with it (the job's own quality is in its record), so the figure can say so.
void add_scaling_efficiency(RunRecord& job, const RunRecord& reference) {
    if (job.execution.dist && reference.summary.median_ms && job.summary.median_ms && *job.summary.median_ms > 0 &&
        job.status == RunStatus::Finished) {
        job.execution.dist->scaling_efficiency = *reference.summary.median_ms / *job.summary.median_ms;
        job.execution.dist->baseline_run_id = reference.id;
        job.execution.dist->baseline_noisy = is_noisy(reference.execution.quality);
        job.execution.dist->baseline_threads = reference.execution.quality ? reference.execution.quality->threads : 0;
    }
}

}  // namespace

RunConfig reference_config(const RunConfig& job, const DeviceInfo& device) {
    RunConfig single = job;
    single.dist = DistSettings{};
    single.name = resolve(single, device).name + " (1 process)";
    return single;
}

DataParallelJobResult run_data_parallel_job(const DataParallelJobRequest& request, const DeviceInfo& device,
                                            const DataParallelJobHooks& hooks, const std::atomic<bool>& cancel) {
    const ResolvedRun resolved = resolve_run(request.config, device);
    DataParallelJobResult result;
    if (request.scaling_baseline) {
        if (!hooks.train_reference)
            throw std::invalid_argument("run_data_parallel_job: a scaling baseline needs train_reference");
        const RunConfig single = reference_config(request.config, device);
        say(hooks, "the 1-process run the job's scaling is measured against:");
        result.reference = hooks.train_reference(single);
        if (hooks.reference_ended) hooks.reference_ended(*result.reference);
        if (cancel.load()) return result;
    }
    LocalJob job;
    job.record_path = record_path_for_job();
    job.nproc = resolved.config.dist.nproc;
    job.master_port = request.master_port > 0 ? request.master_port : free_local_port();
    job.command = request.ranks;
    job.launcher_gpus = cuda_devices_with_context();  // the 1-process run's, kept while the ranks train
    // What that run's caching allocator still holds goes back to the GPU: rank 0 trains on the same device and
    // needs as much again (on a GPU with less than twice the run's peak, it would run out of memory).
    if (!job.launcher_gpus.empty()) {
        try {
            release_cached_gpu_memory();
        } catch (const std::exception&) {
            // Best effort: a 1-process run that ended in a sticky CUDA error makes this throw too; the ranks have
            // their own contexts and may still train.
        }
    }
    say(hooks, "data-parallel job: " + std::to_string(job.nproc) + " processes, " +
                   std::string(to_string(resolved.config.dist.backend)) +
                   ", rendezvous at 127.0.0.1:" + std::to_string(job.master_port));
    const LocalJobOutcome outcome =
        run_local_job(job, cancel, [&](const std::vector<int>& pids) { say(hooks, describe_ranks(pids)); });
    result.job = job_record(resolved, device, job.record_path, outcome, cancel.load(), result.launcher_failed);
    if (result.reference) add_scaling_efficiency(*result.job, *result.reference);
    return result;
}

RankCommand rank_command(const RunConfig& config, const std::string& program) {
    RankCommand command;
    command.executable = program;
    command.arguments = {program};
    for (const std::string& word : command_arguments_for(config)) command.arguments.push_back(word);
    if (config.backend == Backend::Te && config.te_impl == TeImpl::Auto) {
        command.arguments.insert(command.arguments.end(), {"--te-impl", "auto"});
    }
    command.arguments.push_back("--no-store");
    return command;
}

std::string rank_record_path() {
    const char* path = std::getenv(kRankRecordVariable);
    return path == nullptr ? std::string() : std::string(path);
}

void write_rank_record(const std::string& path, const RunRecord& record) {
    write_file_atomically(path, record_to_json_text(record));
}

}  // namespace tewb

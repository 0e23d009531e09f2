#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>

#include "core/config/RunConfig.h"
#include "core/device/DeviceInfo.h"
#include "core/dist/LocalJob.h"
#include "core/results/RunRecord.h"

namespace tewb {

// A data-parallel job on this machine, as te-bench (`run --nproc N`) and the workbench ("Processes") run it.
struct DataParallelJobRequest {
    RunConfig config;              // config.dist enabled; resolved here for `device`
    bool scaling_baseline = true;  // the 1-process run first (te-bench's --no-scaling-baseline: false)
    int master_port = 0;           // 0: a free port on 127.0.0.1
    RankCommand ranks;             // how each rank starts (record_path and the job's variables are added)
};

// The caller's part: how a 1-process run is trained (its progress, its cancel), what becomes of it at once,
// and where the job's lines for a user go.
struct DataParallelJobHooks {
    // Trains the 1-process reference run of `config` (the job's settings without dist, named "… (1 process)");
    // required when the request asks for the scaling baseline.
    std::function<RunRecord(const RunConfig& config)> train_reference;
    // The reference run as it ends, before the job starts (te-bench stores it at once, so a job that fails
    // keeps it).
    std::function<void(const RunRecord& reference)> reference_ended;
    // One line for a user ("data-parallel job: 2 processes, gloo, rendezvous at 127.0.0.1:P"); unset: silent.
    std::function<void(const std::string& line)> say;
};

struct DataParallelJobResult {
    std::optional<RunRecord> reference;  // the 1-process run, when one ran
    // The job's record: rank 0's; or, when a rank ended badly or rank 0 left none, failed (mark_failed,
    // ErrorKind::Distributed) with rank 0's account first and the launcher's after it. Nothing when `cancel`
    // was set during the reference run: the ranks never started.
    std::optional<RunRecord> job;
    bool launcher_failed = false;  // the launcher made the job failed (a rank ended badly, or no record came)
};

// The job: the 1-process reference run (unless not asked for), then the N ranks (run_local_job, with
// `request.ranks`), then the job's record as DataParallelJobResult says, with its scaling efficiency
// (the reference's mean step time over the job's, and the reference's id) when both finished. `cancel`
// reaches the reference run through the hook and the ranks as SIGINT. Throws ConfigError for a
// configuration `device` cannot run (before anything starts), DataError or std::runtime_error when the
// job cannot be set up (no temporary file for the record, no free port, a rank that cannot be started).
DataParallelJobResult run_data_parallel_job(const DataParallelJobRequest& request, const DeviceInfo& device,
                                            const DataParallelJobHooks& hooks, const std::atomic<bool>& cancel);

// The 1-process run a job's scaling is measured against: the job's settings without dist, named
// "<the job's name> (1 process)".
RunConfig reference_config(const RunConfig& job, const DeviceInfo& device);

// The protocol between this launcher and its ranks, one for te-bench and the workbench. A rank is `program run`
// with the job's settings as te-bench's flags (command_arguments_for; --te-impl said even when auto, so a rank
// does not take TEWB_TE_IMPL from its environment instead) and --no-store: rank 0 hands the job's record back
// through the file TEWB_DIST_RECORD names (rank_record_path), which the launcher reads and removes.
RankCommand rank_command(const RunConfig& config, const std::string& program);
// TEWB_DIST_RECORD: set when this process is a rank our launcher started; empty otherwise.
std::string rank_record_path();
// Rank 0's record for the launcher, written atomically to `path`.
void write_rank_record(const std::string& path, const RunRecord& record);

}  // namespace tewb

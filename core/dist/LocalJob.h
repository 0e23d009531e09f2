#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace tewb {

// What each rank of a job on this machine runs: `executable` (a path: no PATH search) with `arguments` as
// its argv (the first word included), which must make it one rank of the job as the launcher's environment
// places it: te-bench's `run` (app/te-bench) does. `output`, when set, is a file the ranks' standard output
// and error go to (appended; "/dev/null" to hide them), else they share the launcher's.
// The variable that tells a rank where rank 0 writes the job's record (core/train/DataParallelJob.h, the rank protocol).
inline constexpr const char* kRankRecordVariable = "TEWB_DIST_RECORD";

struct RankCommand {
    std::string executable;
    std::vector<std::string> arguments;
    std::string output;
};

// A data-parallel job on one machine: N processes of `command`, each told its place in the job the way
// torchrun tells it (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR=127.0.0.1, MASTER_PORT), plus
// TEWB_DIST_RECORD, where rank 0 writes the job's record instead of storing it, and TEWB_JOB_ID,
// TEWB_LAUNCHER_PID and TEWB_LAUNCHER_GPUS (core/dist/WorkerEnv.h). The workers die with the
// launcher's thread (PR_SET_PDEATHSIG).
//
// The job ends as soon as any rank ends badly, in whatever phase (start-up, rendezvous, training,
// shutdown), as torchrun's agent ends it: the other ranks get SIGTERM at once (each stops after its
// current step, or at once where it waits for the others, and rank 0 still writes its record), and
// SIGKILL kStopGrace later if they have not ended. So the launcher is done within kStopGrace (plus its
// 20 ms poll) of the death, whatever the job's --dist-timeout: no rank waits for a peer that is gone.
struct LocalJob {
    int nproc = 2;
    int master_port = 0;  // 0: a free port is picked
    std::string record_path;
    RankCommand command;
    // The CUDA devices this launcher holds a context on (cuda_devices_with_context, core/train/QualityProbe.h),
    // passed to the ranks with its pid (TEWB_LAUNCHER_GPUS, TEWB_LAUNCHER_PID): it waits while they train, so
    // their measurements do not count it as other work on their GPU.
    std::vector<int> launcher_gpus;
};

inline constexpr std::chrono::seconds kStopGrace{3};

struct LocalJobOutcome {
    // The ranks that ended badly on their own, in the order seen; the first is the job's cause:
    // "rank 1 was killed by signal 9 (Killed)", "rank 0 exited with status 1".
    std::vector<std::string> failures;
    // The ranks the launcher stopped after the first failure: "rank 0 (SIGTERM)", "rank 2 (SIGKILL: still
    // running 3 s after SIGTERM)".
    std::vector<std::string> stopped;
    bool all_ok() const { return failures.empty(); }
    // "rank 1 was killed by signal 9 (Killed); the launcher stopped rank 0 (SIGTERM)"
    std::string describe() const;
};

// A TCP port free on 127.0.0.1 right now (the kernel's choice).
int free_local_port();

// The launcher's line naming each rank's process, for a user (or a test) to find them:
// "data-parallel job: rank 0 is process 4242, rank 1 is process 4243".
std::string describe_ranks(const std::vector<int>& pids);

// Runs the job to its end; `started` gets the ranks' process ids once all are started. `cancel` set (Ctrl-C,
// a GUI's Cancel) is passed on to the workers as SIGINT once. Waits for its own ranks only (never for
// another child of the process), and nothing between fork and exec allocates, so a multi-threaded program
// (the GUI) may call it from any thread that lives as long as the call. Throws std::runtime_error when a
// rank cannot be started (the ones started are killed) or `command.output` cannot be opened.
LocalJobOutcome run_local_job(const LocalJob& job, const std::atomic<bool>& cancel,
                              const std::function<void(const std::vector<int>& pids)>& started = {});

// SIGKILL to every rank of the job running now, for a second Ctrl-C, which quits at once: no rank is left
// behind. Async-signal-safe (called from the signal handler).
void kill_running_ranks() noexcept;

}  // namespace tewb

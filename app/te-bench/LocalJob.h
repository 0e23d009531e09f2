#pragma once

#include <atomic>
#include <string>
#include <vector>

namespace tewb::cli {

// `te-bench run --nproc N` on one machine: N copies of this very command, each told its place in the job
// the way torchrun tells it (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR=127.0.0.1, MASTER_PORT), plus
// TEWB_DIST_RECORD, where rank 0 writes the job's record instead of storing it. The workers die with the
// launcher (PR_SET_PDEATHSIG). When a worker ends badly the others get time to notice and stop on their
// own (2 s when rank 0 is gone, as nothing can finish without it; else the job's timeout and 5 s), then
// SIGTERM, then SIGKILL 3 s later: nothing outlives the job.
struct LocalJob {
    int nproc = 2;
    int master_port = 0;  // 0: a free port is picked
    int timeout_s = 120;
    std::string record_path;
};

struct LocalJobOutcome {
    std::vector<std::string> failures;  // "rank 1 was killed by signal 9 (Killed)", in the order seen
    bool all_ok() const { return failures.empty(); }
};

// A TCP port free on 127.0.0.1 right now (the kernel's choice).
int free_local_port();

// Runs the job to its end; `cancel` set (Ctrl-C) is passed on to the workers as SIGINT once.
LocalJobOutcome run_local_job(int argc, char** argv, const LocalJob& job, const std::atomic<bool>& cancel);

}  // namespace tewb::cli

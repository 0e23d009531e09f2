#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tewb {

// Where a process of a data-parallel job stands, as launchers describe it (torchrun, cluster schedulers,
// `te-bench run --nproc`): RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT.
struct WorkerEnv {
    int rank = 0;
    int world_size = 1;
    int local_rank = 0;  // which GPU of this machine the rank uses
    std::string master_addr = "127.0.0.1";
    int master_port = 29500;
    // Which job the process belongs to: TEWB_JOB_ID (`te-bench run --nproc` sets a new one for each job), else
    // torchrun's TORCHELASTIC_RUN_ID; empty when neither is set. A rank checks it against the rendezvous it
    // reaches, so a job never joins another one that holds the same port.
    std::string job_id;
    // The process that started this one and waits while the job trains (`te-bench run --nproc`, the workbench):
    // its pid (TEWB_LAUNCHER_PID) and the CUDA devices it holds a context on (TEWB_LAUNCHER_GPUS: "0" or "0,1";
    // empty: none), left there by the 1-process run it trained first. Unset under other launchers.
    std::optional<int> launcher_pid;
    std::vector<int> launcher_gpus;
};

// A worker when WORLD_SIZE is set: RANK is then required, LOCAL_RANK defaults to RANK, MASTER_ADDR to
// 127.0.0.1 and MASTER_PORT to 29500. Nothing when WORLD_SIZE, RANK and LOCAL_RANK are all unset; RANK or
// LOCAL_RANK without WORLD_SIZE is refused. Numbers are plain digits; RANK and LOCAL_RANK are below
// WORLD_SIZE. A malformed value throws ConfigError naming the variable, its value, why and what is allowed.
std::optional<WorkerEnv> worker_env_from(const std::function<const char*(const char*)>& getenv);
std::optional<WorkerEnv> worker_env();  // from this process's environment

// The processes that hold a context on CUDA device `cuda_device` for this job without computing there while it
// trains: the launcher, when it says it holds one there and it is this process's parent (a variable inherited
// from elsewhere names no one). A rank's measurement does not count them as other work on its GPU.
std::vector<int> idle_job_processes_on(const WorkerEnv& env, int cuda_device);

}  // namespace tewb

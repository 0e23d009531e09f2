#pragma once

#include <functional>
#include <optional>
#include <string>

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
};

// A worker when WORLD_SIZE is set: RANK is then required, LOCAL_RANK defaults to RANK, MASTER_ADDR to
// 127.0.0.1 and MASTER_PORT to 29500. Nothing when WORLD_SIZE, RANK and LOCAL_RANK are all unset; RANK or
// LOCAL_RANK without WORLD_SIZE is refused. Numbers are plain digits; RANK and LOCAL_RANK are below
// WORLD_SIZE. A malformed value throws ConfigError naming the variable, its value, why and what is allowed.
std::optional<WorkerEnv> worker_env_from(const std::function<const char*(const char*)>& getenv);
std::optional<WorkerEnv> worker_env();  // from this process's environment

}  // namespace tewb

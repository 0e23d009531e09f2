#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include "core/config/RunConfig.h"
#include "core/dist/WorkerEnv.h"

namespace tewb {

// One process's membership of a data-parallel job, on PyTorch's distributed runtime (c10d): the
// rendezvous store (a TCPStore served by rank 0) and the process group (Gloo or NCCL) the collectives run
// on. Every wait is bounded by the configuration's timeout.
struct DistJob {
    WorkerEnv env;
    DistBackend backend = DistBackend::Gloo;
    std::chrono::milliseconds timeout{120'000};
    c10::intrusive_ptr<c10d::Store> store;
    c10::intrusive_ptr<c10d::Backend> group;

    int rank() const { return env.rank; }
    int world_size() const { return env.world_size; }
    // "rank 2: " — the prefix of every message this process gives about the job.
    std::string who() const { return "rank " + std::to_string(env.rank) + ": "; }
};

// Whether this build can run `backend` (Gloo needs its headers at build time, NCCL a CUDA LibTorch and
// NCCL's headers); when not, `why` says what is missing.
bool dist_backend_built(DistBackend backend, std::string* why);

// Joins the job `resolved` describes as the process `env` says: rank 0 serves the store at MASTER_ADDR:PORT
// (a port in use is an error at once), every rank announces itself with its configuration, rank 0 waits
// for all of them and compares the configurations (a rank that does not arrive within the timeout, or one
// whose configuration differs, stops the job: every rank gets rank 0's verdict), then the process group
// forms. `cancel` set (a signal) ends the waits for the other ranks within 20 ms: rank 0 then gives the
// ranks that came a verdict saying so. Throws DistError naming the rank and the cause.
std::unique_ptr<DistJob> join_job(const WorkerEnv& env, const RunConfig& resolved, const std::atomic<bool>* cancel = nullptr);

// Collectives the trainer uses, each waited for (bounded by the timeout); errors become DistError.
void broadcast_from_rank0(DistJob& job, std::vector<at::Tensor> tensors);
at::Tensor mean_over_ranks(DistJob& job, const at::Tensor& value);  // a copy, averaged
// Per-slot amaxes, reduced in place to the maximum over ranks where a NaN on any rank wins (as one
// process's amax over all the ranks' data would be); an inf wins over every finite value.
void max_over_ranks_nan_wins(DistJob& job, const at::Tensor& values);

// Every rank's `values` at rank 0 (rank order), through the store; other ranks get an empty result.
std::vector<std::vector<double>> gather_at_rank0(DistJob& job, const std::string& key, const std::vector<double>& values);

// Runs `collective` and turns what c10d throws (a peer gone, a timeout) into DistError with the rank.
void run_collective(const DistJob& job, const char* what, const std::function<void()>& collective);

// Waits for `work` the way its backend needs. Gloo: the host waits, bounded by the job's timeout. NCCL: the
// current CUDA stream waits for the collective and the host goes on (a timed wait would block the host and poll
// in 1 ms sleeps, each step); the process group's watchdog bounds the collective by the same timeout and ends the
// process when it passes, which the launcher reports as a rank that died.
void wait_for(const DistJob& job, c10d::Work& work);

// The reduction that leaves the average over ranks in one collective where the backend has one (NCCL's AVG), else
// SUM, after which the caller divides by the world size (average_needs_division).
c10d::ReduceOp average_op(const DistJob& job);
bool average_needs_division(const DistJob& job);

}  // namespace tewb

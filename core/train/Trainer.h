#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "core/device/DeviceInfo.h"
#include "core/results/RunRecord.h"
#include "core/config/RunConfig.h"
#include "core/train/ResolvedRun.h"

namespace tewb {

struct DistJob;

struct TrainerCallbacks {
    // Once, before the first step, with the record's config, environment, execution and (FP8 runs) the
    // FP8 slots filled in; when the run fails before its first step, with the failed record.
    std::function<void(const RunRecord&)> on_start;
    // After each step, in order. On the GPU a step is reported once its end event has completed, which
    // happens while the next step is already queued: no extra host synchronisation per step.
    std::function<void(const StepMetrics&)> on_step;
    // Not a callback: when set, one more step after the timed ones is traced to this file (Chrome trace
    // JSON) and the record gets its top-kernels table (RunRecord.h, KernelProfile). The caller checked the
    // path (AtomicFile.h, check_outputs).
    std::string profile_trace;
    // Not a callback: every step as a CUDA graph run orders it, on a device that captures no graph (the CPU), so
    // that CPU suites hold a graph run's step: the optimizer writes no FP8 weight copies and each forward casts the
    // weights itself (Trainer.cpp: a captured forward must not read copies made before the capture). The eager
    // order gives the same values; the fused-host suite checks that bit for bit.
    bool graph_shaped_steps = false;
};

// Trains the model on synthetic tokens or a token file (config.data; core/data): warm-up steps, then timed steps;
// reports every step and returns the record; on a token file the held-out loss after the evaluation steps
// (StepMetrics::val_loss) and the file's description in the record from on_start on. Invalid configurations
// and bad token files throw ConfigError before any work. Everything that goes wrong once
// training started (out of memory, diverging loss, a LibTorch error) ends that run only: the record
// comes back with status Failed, error_kind and an actionable message, and GPU caches are emptied so
// the next run in the same process starts clean. Setting `cancel` stops the run within one step
// (status Cancelled, the steps so far kept).
class Trainer {
public:
    explicit Trainer(DeviceInfo device);

    // The run as resolve_run decided it (core/train/ResolvedRun.h); nothing is decided again.
    RunRecord run(const ResolvedRun& run, const TrainerCallbacks& callbacks = {},
                  const std::atomic<bool>* cancel = nullptr) const;
    // resolve_run(config, device()) and the above.
    RunRecord run(const RunConfig& config, const TrainerCallbacks& callbacks = {},
                  const std::atomic<bool>* cancel = nullptr) const;
    // One rank of a data-parallel job (config.dist; core/dist/DistJob.h): rank 0's weights broadcast first,
    // this rank's shard of every step's global batch, gradients averaged over the ranks in buckets while
    // the backward runs, FP8 amaxes reduced before each scale update (config.dist.amax_reduction), the loss
    // averaged over ranks. Every rank returns its record; rank 0's holds every rank's step times and the
    // job's figures. A cancel on any rank stops every rank after the same step. A failure of the job (a
    // rank gone, a timeout) fails the run with error_kind "distributed".
    // `run` resolved for this rank (RunPlace::rank).
    RunRecord run(const ResolvedRun& run, DistJob& job, const TrainerCallbacks& callbacks = {},
                  const std::atomic<bool>* cancel = nullptr) const;

    const DeviceInfo& device() const { return device_; }

private:
    RunRecord run_impl(const ResolvedRun& run, const TrainerCallbacks& callbacks, const std::atomic<bool>* cancel,
                       DistJob* job) const;

    DeviceInfo device_;
};

// The record a run starts from: config, environment, execution.
RunRecord make_run_header(const ResolvedRun& run, const DeviceInfo& device);

// Gives the memory LibTorch's CUDA caching allocator holds unused back to the driver, on every device: after a
// failed run, and before a data-parallel job's ranks start on the GPU the 1-process run used. Nothing without CUDA
// LibTorch.
void release_cached_gpu_memory();

}  // namespace tewb

#pragma once

#include <atomic>

#include "core/dist/WorkerEnv.h"
#include "core/train/Trainer.h"

namespace tewb {

// One rank's part of a data-parallel job (config.dist) as the environment places it: joins the job
// (core/dist/DistJob.h) and trains (Trainer::run with the job). Every failure comes back as a failed
// record with error_kind "distributed" and a message naming the rank and the cause, not as an exception,
// except a configuration that cannot run here at all (ConfigError, before anything starts).
RunRecord run_as_rank(const Trainer& trainer, const RunConfig& config, const WorkerEnv& env, const TrainerCallbacks& callbacks,
                      const std::atomic<bool>* cancel);

}  // namespace tewb

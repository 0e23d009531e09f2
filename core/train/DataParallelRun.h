#pragma once

#include <atomic>

#include "core/dist/WorkerEnv.h"
#include "core/train/Trainer.h"

namespace tewb {

// One rank's part of a data-parallel job (config.dist) as the environment places it (`run` resolved with
// RunPlace::rank(env.local_rank)): joins the job
// (core/dist/DistJob.h) and trains (Trainer::run with the job). Every failure comes back as a failed
// record with error_kind "distributed" and a message naming the rank and the cause, not as an exception,
// except a configuration that cannot run here at all (ConfigError, before anything starts). `cancel` set
// while the job forms (a signal: Ctrl-C, or a launcher stopping the job) ends the rendezvous at once with a
// cancelled record; once training, it stops every rank after the same step.
RunRecord run_as_rank(const Trainer& trainer, const ResolvedRun& run, const WorkerEnv& env, const TrainerCallbacks& callbacks,
                      const std::atomic<bool>* cancel);

}  // namespace tewb

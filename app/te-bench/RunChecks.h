#pragma once

#include <optional>
#include <vector>

#include "Arguments.h"
#include "core/config/RunConfig.h"
#include "core/config/SweepPlan.h"
#include "core/dist/WorkerEnv.h"
#include "core/results/AtomicFile.h"

namespace tewb::cli {

// What can be checked of run, compare and sweep without LibTorch or a device: every flag's value, how the
// flags combine, the launcher's environment, the outputs. te-bench checks it before it hands the command to
// te-bench-torch (a bad argument costs no LibTorch start), and te-bench-torch again, the same code. Each
// throws ConfigError (exit 2); what depends on the device is checked by te-bench-torch before training.

struct CheckedRun {
    RunConfig requested;
    std::optional<WorkerEnv> env;  // set when this process is a rank under a launcher (ours or an outside one)
};
CheckedRun check_run_command(const Commands& c);
RunConfig check_compare_command(const Commands& c);  // the base configuration the comparison is planned from
SweepSpec check_sweep_command(const Commands& c);
// The one of the three that was given; nothing for the other commands.
void check_before_libtorch(const Commands& c);

std::vector<OutputRequest> compare_outputs(const Commands& c);
std::vector<OutputRequest> sweep_outputs(const RunFlags& flags);

}  // namespace tewb::cli

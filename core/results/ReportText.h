#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/results/RunGroups.h"
#include "core/results/RunRecord.h"

namespace tewb {

// The words a report is built from, computed from the records alone (the GUI's report and its tests
// share them).

// The `te-bench run` command line that reproduces a run's configuration on another machine.
std::string command_line_for(const RunConfig& config);
// The same as arguments, after `te-bench`: what a program starts te-bench with (no shell, no quoting).
std::vector<std::string> command_arguments_for(const RunConfig& config);

// What a reader must know before trusting a run's numbers: "CPU" (not a GPU), "emulated FP8" (FP8 casts
// real, GEMMs in higher precision: the speed is not FP8's), "fewer steps than the seed (w + t, seed
// 10 + 30)", "smaller than the seed shape", and the run's status when it did not finish.
std::vector<std::string> honesty_labels(const RunRecord& record);

// One sentence: the fastest configuration against the baseline, where, and how its final loss compares,
// e.g. "te fp8 is 1.80x faster than the torch bf16 baseline at the seed shape on NVIDIA H200, final loss
// within 0.01." Says "not significant" when the speedup's interval contains 1.0, and what is emulated.
std::string report_headline(const std::vector<RunRecord>& runs, const std::vector<RunGroup>& groups);

}  // namespace tewb

#pragma once

#include <vector>

#include "core/results/RunRecord.h"

namespace tewb {

// Statistics over the timed steps: mean, median and p90 (linear interpolation between closest ranks,
// as numpy's default) of step_ms; tokens/s from the mean; TFLOP/s from the analytic FLOP count and the
// mean; MFU = TFLOP/s / peak when a peak is known; peak memory over all steps; loss of the last step (and of
// the last validation, on a token file); the
// mean time breakdown (forward, backward, optimizer, FP8) over the timed steps that were split, else over
// the eager warm-up steps after the first (a CUDA-graph run), with `breakdown_source` saying which.
RunSummary summarize(const std::vector<StepMetrics>& steps, const RunConfig& config, const Execution& execution);

// p in [0, 100]; `values` need not be sorted; empty input gives 0.
double percentile(std::vector<double> values, double p);

}  // namespace tewb

#pragma once

#include <string>

#include "core/results/RunRecord.h"

namespace tewb {

// A few lines on an FP8 run's casts for people reading a terminal: per slot role (input, weight,
// grad_output) the range of amax and scale over the timed steps, how many slots ever recorded a
// non-finite amax (which freezes their scale), and, when the run inspected its casts, the worst
// saturated and underflowed fractions with the slot they occurred in. Empty for runs without FP8.
std::string render_fp8_summary(const RunRecord& record);

}  // namespace tewb

#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/results/RunRecord.h"

// When one run's step time may be set against another's as a speedup. Used by every place that shows one: the
// run tables (te-bench, the window), the report, CSV exports and the repeat groups.
namespace tewb {

// A run against a baseline: comparable when both trained the same model (arch and every size), on the same kind
// of data (synthetic tokens or a token file), with the same tokens per step in each process, on the same kind of
// device, both with or both without FP8 inspection (whose host reads are inside the step time). Runs of different process counts (a data-parallel job and its 1-process run) compare per token: the
// speedup is the ratio of tokens per second (`token_ratio`: the run's tokens per step over the baseline's).
struct Comparability {
    std::vector<std::string> differences;  // "hidden 768 vs 256", …; empty: comparable
    double token_ratio = 1.0;
    bool per_token() const { return token_ratio != 1.0; }
    bool comparable() const { return differences.empty(); }
};

Comparability comparability(const RunRecord& run, const RunRecord& baseline);

// Why a run has no speedup whatever it is compared with: it was cancelled or failed (its steps are a part of a run).
// A running run has its live figures.
std::optional<std::string> no_speedup_reason(const RunRecord& run);

// Why a run cannot be the baseline: its FP8 GEMMs were emulated (its time is the emulation's cost), or it has no
// speedup of its own (no_speedup_reason).
std::optional<std::string> baseline_refusal(const RunRecord& baseline);

// Everything that keeps `run` from a speedup against `baseline`, in words ("cancelled", "hidden 768 vs 256"); empty
// when it has one. A run against itself always has one.
std::vector<std::string> speedup_obstacles(const RunRecord& run, const RunRecord& baseline);

// The table cell for a run with obstacles, and its explanation: "not comparable" / "not comparable: a; b".
inline constexpr const char* kNotComparable = "not comparable";
std::string not_comparable_words(const std::vector<std::string>& obstacles);

}  // namespace tewb

#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/common/Statistics.h"
#include "core/results/RunRecord.h"

namespace tewb {

// Runs grouped for comparison: the repeats of one configuration (same RepeatInfo::group) form one group,
// every other run is a group of its own. How spread is measured depends on what there is:
// - repeats (2 or more runs): the sample is each repeat's mean ms/step; the centre is its median, the
//   spread its min–max, the interval a 95% bootstrap interval of the median over repeats;
// - one run: the sample is its timed steps' ms; the centre is their mean (core's mean ms/step, as the
//   plain comparison uses), the spread their min–max, the interval a bootstrap interval of the mean.
// Speedup against the baseline group = baseline centre / this centre, with the bootstrap interval of that
// ratio (both samples resampled); it is significant when the interval does not contain 1.0.
struct RunGroup {
    std::string name;                  // the first member's display_name (every member has the configuration's)
    std::string group_id;              // RepeatInfo::group, empty for a single run
    std::vector<std::size_t> members;  // indices into the runs given, in their order
    // The members its figures count: every member of a single run's group; of repeats, the finished ones (a
    // series cancelled part way, or a repeat that failed, is summarised over what finished).
    std::vector<std::size_t> counted;
    int planned = 1;                   // repeats the series was to have (RepeatInfo::count), 1 for a single run
    bool repeated = false;             // 2 or more counted repeats
    std::vector<double> sample_ms;     // the sample described above
    std::optional<double> centre_ms;
    std::optional<double> min_ms;
    std::optional<double> max_ms;
    std::optional<Interval> centre_ci;
    std::optional<double> speedup;
    std::optional<Interval> speedup_ci;
    // A member's FP8 GEMMs were emulated: `speedup` is the emulation's cost, shown as kEmulatedSpeedup.
    bool emulated = false;
    // A counted member's measurement was noisy (MeasurementQuality); `speedup_noisy`: this group or the baseline
    // group is, so its speedup and interval are not clean evidence however significant they look.
    bool noisy = false;
    bool speedup_noisy = false;
    bool is_baseline = false;
    // Why the group has no speedup against the baseline's (Comparability.h, its first counted member against the
    // baseline group's); empty when it has one. `per_token`: process counts differ, tokens per second compared.
    std::vector<std::string> not_comparable;
    bool per_token = false;
    std::optional<double> memory_ratio;  // median peak memory / the baseline's
    std::optional<double> final_loss;    // median over members
    std::uint64_t peak_mem_bytes = 0;    // median over members

    // A speedup whose interval contains 1.0 is not evidence of a difference.
    bool significant() const { return speedup_ci && !speedup_ci->contains(1.0); }
    // "3 repeats", "2 of 3 repeats", "30 timed steps", "30 timed steps (1 of 3 repeats finished)".
    std::string sample_basis() const;
};

// Groups `runs` in order of first appearance; `baseline` is the index of a run whose group is the
// baseline (nothing: no speedups).
std::vector<RunGroup> group_runs(const std::vector<RunRecord>& runs, std::optional<std::size_t> baseline,
                                 const BootstrapOptions& options = {});

// "1.23×" with its interval, "[1.10–1.35]", and " not significant" when the interval contains 1.0, and
// " noisy" when either side's measurement was (group or baseline); "emulated" for a group whose FP8 GEMMs
// were emulated.
std::string speedup_text(const RunGroup& group);

// Plain-text table for terminals, one row per group: runs, centre ms/step, min–max, its interval,
// speedup with interval and significance, memory ratio, final loss; under it, for each series with repeats
// that did not finish, how many did and what the others were.
std::string render_group_table(const std::vector<RunRecord>& runs, const std::vector<RunGroup>& groups);

// Repeats alternate configurations (A B A B …) so that drift on a shared machine hits all of them:
// the order in which `configs` × `repeats` run, as (config index, repeat number 1..repeats).
std::vector<std::pair<std::size_t, int>> alternating_order(std::size_t configs, int repeats);

}  // namespace tewb

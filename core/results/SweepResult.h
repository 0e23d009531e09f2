#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/config/SweepPlan.h"
#include "core/results/RunRecord.h"

namespace tewb {

// One precision at one size of a sweep: its mean ms/step, the baseline's, and the speedup
// (baseline / this; above 1 is faster). `note` says why a number is missing (skipped, failed).
struct SweepCell {
    SweepPoint point;
    Precision precision = Precision::Auto;
    std::optional<double> ms;
    std::optional<double> baseline_ms;
    std::optional<double> speedup;
    bool emulated = false;  // FP8 GEMMs emulated (CPU): the speed is not FP8 speed
    std::string note;
    // This size's run or its baseline was measured noisily (MeasurementQuality): the speedup is marked, and
    // `noisy_reasons` says whose and why.
    bool noisy = false;
    std::string noisy_reasons;
};

struct SweepResult {
    std::vector<SweepPoint> points;  // smallest to largest by analytic FLOPs per step
    std::vector<double> flops;       // per point
    std::vector<Precision> precisions;
    std::vector<SweepCell> cells;    // points × precisions, row-major
    std::vector<std::string> skipped;  // "<run name>: <reason>"
    bool any_emulated = false;
    std::string device;              // where it ran, e.g. "NVIDIA H200" or "CPU"
    // Runs of the plan that were to run (not skipped), and how those ended: only finished runs give a time.
    std::size_t runs_to_run = 0;
    std::size_t runs_finished = 0;
    std::size_t runs_cancelled = 0;
    std::size_t runs_failed = 0;
    std::size_t runs_not_run = 0;

    // "Sweep cut short: 3 of 8 runs finished (1 cancelled, 4 not run); …", or nothing when every run finished.
    std::optional<std::string> cut_short_statement() const;

    const SweepCell& cell(std::size_t point, std::size_t precision) const {
        return cells[point * precisions.size() + precision];
    }
    // For each precision, in words: from which size on it is faster than the baseline (break-even), or
    // that it never / always is on this grid. Sizes whose speedup is unknown (skipped, cancelled, not run,
    // failed) are passed over and never named; when there are such, the statement says how many were measured.
    std::vector<std::string> break_even_statements() const;
    // The first point from which `precision`'s speedup is ≥ 1 at every larger measured size; nothing
    // when the largest measured size is still slower.
    std::optional<std::size_t> break_even_point(std::size_t precision) const;
};

// `records[i]` is the run of `plan[i]`, or nothing when it was skipped or not run.
SweepResult analyze_sweep(const std::vector<SweepRun>& plan, const std::vector<std::optional<RunRecord>>& records);

std::string render_sweep_table(const SweepResult& result);
// One row per size and precision: hidden, batch, seq, flops, precision, ms, baseline ms, speedup, emulated, note,
// noisy, noisy_reasons.
std::string sweep_csv_text(const SweepResult& result);

}  // namespace tewb

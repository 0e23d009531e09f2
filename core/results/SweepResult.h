#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/common/Statistics.h"
#include "core/config/SweepPlan.h"
#include "core/results/RunRecord.h"

namespace tewb {

// What a size's measurement says about a precision: it pays (faster than the baseline, the speedup's 95% interval
// above 1, neither side noisy), it is slower (the interval below 1, neither side noisy), it is unclear (the
// interval contains 1, there is none, or a side was measured noisily), or there is no verdict (no speedup:
// skipped, not run, cancelled, failed, not comparable; or emulated FP8, whose time is the emulation's cost).
enum class SweepVerdict { Pays, Slower, Unclear, None };

// One precision at one size of a sweep: its time (mean ms/step of its run, or the median over its repeats), the
// baseline's, and the speedup (baseline / this; above 1 is faster) with its 95% bootstrap interval (over the timed
// steps of one run each, or over the repeats: RunGroups.h). `note` says why a number is missing (skipped, failed).
struct SweepCell {
    SweepPoint point;
    Precision precision = Precision::Auto;
    std::optional<double> ms;
    std::optional<double> baseline_ms;
    std::optional<double> speedup;
    std::optional<Interval> speedup_ci;
    bool emulated = false;  // FP8 GEMMs emulated (CPU): the speed is not FP8 speed
    std::string note;
    // This size's run or its baseline was measured noisily (MeasurementQuality): the speedup is marked, and
    // `noisy_reasons` says whose and why.
    bool noisy = false;
    std::string noisy_reasons;
    std::string basis;  // what the interval rests on: "3 repeats", "30 timed steps"

    bool significant() const { return speedup_ci && !speedup_ci->contains(1.0); }
    SweepVerdict verdict() const;
};

// "1.50x [1.42-1.58]", with " not significant" when the interval contains 1 and " noisy" when a side was noisy;
// "emulated" for emulated FP8; "-" without a speedup. `times`: the sign after the ratio ("x", or "×" in the window).
std::string sweep_speedup_text(const SweepCell& cell, std::string_view times = "x");

struct SweepResult {
    std::vector<SweepPoint> points;  // smallest to largest by analytic FLOPs per step
    std::vector<double> flops;       // per point
    std::vector<Precision> precisions;
    std::vector<SweepCell> cells;    // points × precisions, row-major
    std::vector<std::string> skipped;  // "<run name>: <reason>"
    bool any_emulated = false;
    std::string device;              // where it ran, e.g. "NVIDIA H200" or "CPU"
    std::string baseline;            // what every speedup is against: "torch bf16", "te bf16" (SweepSpec::baseline_backend)
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
    // For each precision, in words: from which size on it pays (break-even), or that it never / always does on this
    // grid; a size whose verdict is unclear (noisy, or its interval contains 1) never counts as paying, and the
    // statement says how many there were and how to settle them (repeats, an idle machine). Sizes without a
    // verdict (skipped, cancelled, not run, failed) are passed over and never named; when there are such, the
    // statement says how many were measured.
    std::vector<std::string> break_even_statements() const;
    // The first point from which `precision` pays (SweepVerdict::Pays) at every larger size with a verdict;
    // nothing when the largest such size does not pay.
    std::optional<std::size_t> break_even_point(std::size_t precision) const;
    int repeats = 1;  // per configuration and size, as planned
    // The FP8 runs used a microscaling recipe (MXFP8, NVFP4): emulated on every GPU this workbench drives, so their
    // statements say where they would run natively instead of asking for an FP8 GPU.
    bool microscaling = false;
};

// `records[i]` is the run of `plan[i]`, or nothing when it was skipped or not run.
SweepResult analyze_sweep(const std::vector<SweepRun>& plan, const std::vector<std::optional<RunRecord>>& records);

std::string render_sweep_table(const SweepResult& result);
// One row per size and precision: hidden, batch, seq, flops, precision, ms, baseline ms, speedup, emulated, note,
// noisy, noisy_reasons, the speedup's 95% interval (lo, hi), significant, verdict (pays, slower, unclear, none),
// what the interval rests on, and the baseline ("te bf16").
std::string sweep_csv_text(const SweepResult& result);

}  // namespace tewb

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

// Which code ran a te run's modules, from its record: "te path: fused-cuda", "te path: fused-host, FP8 GEMMs
// emulated", "te path: reference" (", FP8 GEMMs emulated" whenever they were); "te path: not recorded" for te
// records from before it was kept; empty for torch runs.
std::string te_path_words(const RunRecord& record);
// "no fallbacks", or "2 fallbacks to the reference (14 calls)".
std::string fallback_summary(const Execution& execution);
// One line per fallback: "op: reason (N calls)".
std::vector<std::string> fallback_lines(const Execution& execution);
// The fused path ran every call itself: a fused te path with no fallback. A run with fallbacks never is.
bool fully_fused(const Execution& execution);
// The lines `te-bench run` prints about a te run: the path and the fallbacks in one line ("te path: fused-cuda,
// fully fused, no fallbacks"; "te path: fused-host, FP8 GEMMs emulated; 2 fallbacks to the reference (14 calls)"),
// then "  fallback: op: reason (N calls)" per fallback; `named` puts the run's name first. Empty for torch runs.
std::string te_path_text(const RunRecord& record, bool named);

// What a reader must know before trusting a run's numbers: "CPU" (not a GPU), "emulated FP8" (FP8 casts
// real, GEMMs in higher precision: the speed is not FP8's), "fewer timed steps than the seed (t, seed 30)"
// (only when there are fewer), "shorter warm-up than the seed (w steps, seed 10)", "not the seed shape", "N fallbacks to the reference" (a fused te run that was not fully
// fused), "noisy: <reasons>" (MeasurementQuality), "measurement quality not recorded" (a finished run from before
// it was kept), and the run's status when it did not finish.
// The launch ledger's totals (per step, per layer, saved for backward, where measured), one per line; empty when
// the record has no ledger.
std::string ledger_totals_text(const RunRecord& record, bool named);

std::vector<std::string> honesty_labels(const RunRecord& record);

// What the report says about measurement quality, naming the noisy runs and why: "Noisy measurements: te bf16
// (step times vary by 14.2 % ...); their speedups are not clean evidence." Also names the runs whose quality was
// not recorded; for clean runs: "Every run was measured with steady step times on an undisturbed machine (...)".
// Empty for no runs.
std::string quality_sentence(const std::vector<RunRecord>& runs);

// One sentence: the fastest configuration against the baseline, where, and how its final loss compares,
// e.g. "te fp8 is 1.80x faster than the torch bf16 baseline at the seed shape on NVIDIA H200, final loss
// within 0.01." Says "not significant" when the speedup's interval contains 1.0, "noisy" when either side's
// measurement was (never a clean "faster"), and what is emulated.
std::string report_headline(const std::vector<RunRecord>& runs, const std::vector<RunGroup>& groups);

}  // namespace tewb

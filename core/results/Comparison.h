#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/results/RunRecord.h"

namespace tewb {

// One run against a baseline run: speedup = baseline mean ms / this mean ms (above 1 is faster);
// memory ratio = this peak memory / baseline peak memory (below 1 uses less).
// A run whose FP8 GEMMs were emulated keeps its measured ratio in `speedup`, but it is never shown as a
// speedup (`emulated`: kEmulatedSpeedup in tables, empty in CSV files).
struct ComparisonRow {
    const RunRecord* run = nullptr;
    std::optional<double> speedup;
    std::optional<double> memory_ratio;
    bool emulated = false;
    // MXFP8 or NVFP4 emulated: the run's memory holds the emulation's copies (a byte per value, float32 block scales),
    // not the format's bytes, so it has no memory ratio either (a note under the table says why).
    bool emulated_format_memory = false;
    bool noisy = false;  // this run's or the baseline's measurement was noisy: the ratio is not clean evidence
    // Why the run has no speedup and no memory ratio against the baseline (Comparability.h); empty when it has them.
    std::vector<std::string> not_comparable;
    bool per_token = false;  // process counts differ: the speedup is the ratio of tokens per second
};

std::vector<ComparisonRow> compare_runs(const std::vector<RunRecord>& runs, std::optional<std::size_t> baseline);

// Under a run table: per run without a speedup "no speedup: <name>: not comparable: <why>", per emulated MXFP8 or
// NVFP4 run why it has no memory ratio, and a line saying that runs of another process count compare per token when
// one does. Empty when there is nothing to say.
std::string render_comparability_notes(const std::vector<ComparisonRow>& rows);

// Plain-text table for terminals: one row per run with the summary, speedup and memory ratio.
std::string render_summary_table(const std::vector<RunRecord>& runs, std::optional<std::size_t> baseline);

// "Where the step time goes": one row per run with a breakdown (forward, backward, optimizer, FP8
// bookkeeping, as mean ms and as a share of their sum) and which steps it is over. Empty when no run
// has one.
std::string render_breakdown_table(const std::vector<RunRecord>& runs);

// A data-parallel job in a few lines: ranks and backend, buckets (and how many started during the
// backward), every rank's mean ms per step, the job's tokens/s, the scaling efficiency against the
// 1-process run. Empty for a plain run.
std::string render_job_summary(const RunRecord& run);
// What a scaling efficiency above 100 % means: not a result to quote.
std::string scaling_above_perfect_words();
// Whether a job's scaling efficiency stands on a noisy measurement: the job's or its 1-process run's.
bool scaling_is_noisy(const RunRecord& job);
// What that means, naming which run was noisy: not a result to quote either.
std::string scaling_noisy_words(const RunRecord& job);
// On the CPU a rank computes with its share of the cores and the 1-process run with all of them, which the efficiency
// includes: "2 CPU threads in the 1-process run, 1 in each rank". Empty for a GPU job or where either count is unknown.
std::string scaling_threads_words(const RunRecord& job);
// The lines under a run table about measurement quality: per noisy run "noisy: <name>: <reasons>", one line
// naming the runs whose quality was not recorded; empty when every run was measured and clean.
std::string render_quality_notes(const std::vector<RunRecord>& runs);

}  // namespace tewb

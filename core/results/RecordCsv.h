#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "core/results/RunRecord.h"

namespace tewb {

// Per-step metrics, long format: one row per run and step, raw values (not decimated); val_loss is empty on the
// steps that did not evaluate (and in runs on synthetic tokens).
void write_steps_csv(std::ostream& out, const std::vector<RunRecord>& runs);
// One row per run: the summary, and speedup / memory ratio against `baseline` when given; its measurement quality
// in the last columns (cv, others_cpu_cores, load_average, noisy, noisy_reasons).
void write_summary_csv(std::ostream& out, const std::vector<RunRecord>& runs, std::optional<std::size_t> baseline);

// FP8 statistics, long format: one row per run, step and FP8 slot (module, slot role, dtype): the amax
// recorded, the scale used and, when the run inspected its casts, the saturated and underflowed
// fractions, the relative MSE and SNR (dB) of the cast, and what each what-if recipe (current, block, MXFP8,
// NVFP4) would have given on the same tensors (empty otherwise). Runs without FP8 contribute no rows.
void write_fp8_csv(std::ostream& out, const std::vector<RunRecord>& runs);
// The block scales' histograms of inspected block, MXFP8 and NVFP4 runs (RunRecord::fp8_block_scales): per run and
// slot one row per binade (scale_binade_log2 = e for scales in [2^e, 2^(e+1))) and one with an empty binade for the
// blocks without a scale. Other runs contribute no rows.
void write_block_scales_csv(std::ostream& out, const std::vector<RunRecord>& runs);

// The same as text.
std::string steps_csv_text(const std::vector<RunRecord>& runs);
std::string summary_csv_text(const std::vector<RunRecord>& runs, std::optional<std::size_t> baseline);
std::string fp8_csv_text(const std::vector<RunRecord>& runs);
std::string block_scales_csv_text(const std::vector<RunRecord>& runs);

// A text cell (a name, label, message, kernel name; never a number) as an RFC 4180 field: a text that begins
// with =, +, -, @, a tab or a carriage return gets a leading ' so that a spreadsheet shows it instead of
// running it as a formula; then quoted when it holds a comma, quote or line break. Numbers are written as they
// are, so a negative number stays a number. Every CSV the programs write puts its text cells through here.
std::string csv_field(std::string_view text);

}  // namespace tewb

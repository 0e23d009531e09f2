#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/results/RunRecord.h"

namespace tewb {

// A few lines on an FP8 run's casts for people reading a terminal: per slot role (input, weight,
// grad_output) the range of amax and scale over the timed steps, how many slots ever recorded a
// non-finite amax (which freezes their scale), and, when the run inspected its casts, the worst
// saturated and underflowed fractions with the slot they occurred in. Empty for runs without FP8.
std::string render_fp8_summary(const RunRecord& record);

// What the FP8 inspector shows per slot and step.
enum class Fp8Metric { Amax, Scale, Saturated, Underflow, SnrDb, CurrentSnrDb, BlockSnrDb, Mxfp8SnrDb, Nvfp4SnrDb };
std::string_view to_string(Fp8Metric metric);           // "amax", "scale", "saturated %", …
std::optional<double> fp8_metric_value(const Fp8SlotSample& sample, Fp8Metric metric);  // % for fractions
Fp8Metric what_if_metric(WhatIf what_if);                // the SNR of the what-if recipe

// One slot of an inspected FP8 run over its timed steps: the median SNR (dB) as cast and under each what-if recipe
// (computed on the same tensors), the worst saturated fraction, and which recipe would have given the least error
// ("this recipe" when within 0.5 dB of the best, else the what-if's title).
struct Fp8SlotDigest {
    Fp8SlotInfo slot;
    std::optional<double> snr_db;
    std::array<std::optional<double>, kWhatIfCount> what_if_snr_db{};
    std::optional<double> worst_saturated;
    std::string best;
};
std::vector<Fp8SlotDigest> fp8_slot_digests(const RunRecord& record);

// A run's block-scale histograms of the slots of one role added together (no counts when it has none).
Fp8ScaleHistogram merged_block_scales(const RunRecord& record, SlotRole role);
// The binade (e for scales in [2^e, 2^(e+1))) holding most blocks of a histogram; nothing without blocks.
std::optional<int> modal_binade(const Fp8ScaleHistogram& histogram);

}  // namespace tewb

#include "core/results/Fp8Summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "core/common/Statistics.h"
#include "core/common/TextTable.h"
#include "core/results/RunWords.h"

namespace tewb {

namespace {

struct Range {
    double low = std::numeric_limits<double>::infinity();
    double high = -std::numeric_limits<double>::infinity();
    void add(double v) {
        low = std::min(low, v);
        high = std::max(high, v);
    }
    std::string text() const { return low > high ? "-" : format_significant(low) + " .. " + format_significant(high); }
};

struct Worst {
    double value = -1;
    std::size_t slot = 0;
    int step = 0;
};

// Per slot role, the binades the block scales of its slots spanned over the run, the most common one and the blocks
// without a scale (inspected runs of a recipe with block scales; empty otherwise).
std::string block_scales_lines(const RunRecord& record, const SlotRole (&roles)[3]) {
    if (record.fp8_block_scales.empty()) return {};
    std::vector<std::vector<std::string>> rows;
    for (const SlotRole role : roles) {
        const Fp8ScaleHistogram merged = merged_block_scales(record, role);
        const std::int64_t empty = merged.empty_blocks;
        const std::optional<int> mode = modal_binade(merged);
        const auto power = [](int e) { return "2^" + std::to_string(e); };
        rows.push_back({std::string(to_string(role)), std::to_string(merged.blocks()),
                        mode ? power(merged.lowest_exponent) + " .. " + power(merged.lowest_exponent + static_cast<int>(merged.counts.size()) - 1)
                             : std::string("-"),
                        mode ? power(*mode) : std::string("-"), std::to_string(empty)});
    }
    return "block scales over the run (the factor a block's values are multiplied by, by binade):\n" +
           render_text_table({"slot", "blocks", "range", "most blocks", "without a scale"}, rows);
}

}  // namespace

std::string render_fp8_summary(const RunRecord& record) {
    if (record.fp8_slots.empty()) {
        return {};
    }
    const SlotRole roles[] = {SlotRole::Input, SlotRole::Weight, SlotRole::GradOutput};
    Range amax[3], scale[3];
    std::vector<bool> non_finite(record.fp8_slots.size(), false);
    Worst saturated, underflow;
    bool inspected = false;
    for (const StepMetrics& step : record.steps) {
        if (step.phase != Phase::Timed) continue;
        for (std::size_t i = 0; i < step.fp8.size() && i < record.fp8_slots.size(); ++i) {
            const Fp8SlotSample& s = step.fp8[i];
            const int r = static_cast<int>(std::find(std::begin(roles), std::end(roles), record.fp8_slots[i].role) - roles);
            if (!std::isfinite(s.amax)) {
                non_finite[i] = true;
            } else if (r < 3 && s.amax > 0) {
                amax[r].add(s.amax);
                scale[r].add(s.scale);
            }
            if (s.saturated) {
                inspected = true;
                if (*s.saturated > saturated.value) saturated = {*s.saturated, i, step.step};
            }
            if (s.underflow && *s.underflow > underflow.value) underflow = {*s.underflow, i, step.step};
        }
    }
    std::vector<std::vector<std::string>> rows;
    for (int r = 0; r < 3; ++r) {
        rows.push_back({std::string(to_string(roles[r])), amax[r].text(), scale[r].text()});
    }
    std::ostringstream out;
    out << "FP8 casts over the timed steps (" << record.fp8_slots.size() << " slots"
        << fp8_casts_emulated_clause(record.execution.fp8_emulated) << "):\n"
        << render_text_table({"slot", "amax", "scale"}, rows);
    const auto non_finite_slots = std::count(non_finite.begin(), non_finite.end(), true);
    out << "slots with an inf or NaN amax (an inf freezes the scale while in the window, a NaN step keeps it): " << non_finite_slots << "\n";
    const auto where = [&](const Worst& w) {
        const Fp8SlotInfo& slot = record.fp8_slots[w.slot];
        return format_significant(100.0 * w.value) + "% (" + slot.module + " " + std::string(to_string(slot.role)) + ", step " +
               std::to_string(w.step) + ")";
    };
    if (inspected) {
        out << "worst saturated fraction: " << where(saturated) << "\n";
        out << "worst underflow fraction: " << where(underflow) << "\n";
    }
    // Quantization error per slot role: the median SNR over the timed steps' casts, as cast and under the
    // what-if recipes (computed on the same tensors, not trained with).
    constexpr std::size_t kColumns = 1 + kWhatIfCount;  // this recipe, then the what-ifs
    std::vector<double> snr[3][kColumns];
    for (const StepMetrics& step : record.steps) {
        if (step.phase != Phase::Timed) continue;
        for (std::size_t i = 0; i < step.fp8.size() && i < record.fp8_slots.size(); ++i) {
            const Fp8SlotSample& s = step.fp8[i];
            const int r = static_cast<int>(std::find(std::begin(roles), std::end(roles), record.fp8_slots[i].role) - roles);
            if (r >= 3) continue;
            for (std::size_t k = 0; k < kColumns; ++k) {
                const std::optional<float>& rel = k == 0 ? s.rel_mse : s.what_if(kWhatIfs[k - 1]);
                if (rel && std::isfinite(*rel)) snr[r][k].push_back(snr_db(*rel));
            }
        }
    }
    if (!snr[0][0].empty() || !snr[1][0].empty() || !snr[2][0].empty()) {
        const auto median = [](const std::vector<double>& v) { return v.empty() ? std::string("-") : format_significant(median_of(v)); };
        std::vector<std::vector<std::string>> snr_rows;
        for (int r = 0; r < 3; ++r) {
            std::vector<std::string> row{std::string(to_string(roles[r]))};
            for (std::size_t k = 0; k < kColumns; ++k) row.push_back(median(snr[r][k]));
            snr_rows.push_back(std::move(row));
        }
        std::vector<std::string> header{"slot", "this recipe"};
        for (const WhatIf w : kWhatIfs) header.push_back("what-if " + std::string(what_if_column(w)));
        out << "quantization SNR in dB (median over the timed steps; higher is better):\n" << render_text_table(header, snr_rows);
    }
    out << block_scales_lines(record, roles);
    if (record.execution.fp8_inspection_ms && record.summary.mean_ms && *record.summary.mean_ms > 0) {
        out << "inspection cost: " << format_significant(*record.execution.fp8_inspection_ms) << " ms of "
            << format_significant(*record.summary.mean_ms) << " ms per step ("
            << format_significant(100.0 * *record.execution.fp8_inspection_ms / *record.summary.mean_ms) << "%)\n";
    }
    return out.str();
}

std::string_view to_string(Fp8Metric metric) {
    switch (metric) {
        case Fp8Metric::Amax: return "amax";
        case Fp8Metric::Scale: return "scale";
        case Fp8Metric::Saturated: return "saturated %";
        case Fp8Metric::Underflow: return "underflow %";
        case Fp8Metric::SnrDb: return "SNR dB";
        case Fp8Metric::CurrentSnrDb: return "what-if current scaling SNR dB";
        case Fp8Metric::BlockSnrDb: return "what-if block scaling SNR dB";
        case Fp8Metric::Mxfp8SnrDb: return "what-if MXFP8 SNR dB";
        case Fp8Metric::Nvfp4SnrDb: return "what-if NVFP4 SNR dB";
    }
    return "?";
}

Fp8Metric what_if_metric(WhatIf what_if) {
    switch (what_if) {
        case WhatIf::Current: return Fp8Metric::CurrentSnrDb;
        case WhatIf::Block: return Fp8Metric::BlockSnrDb;
        case WhatIf::Mxfp8: return Fp8Metric::Mxfp8SnrDb;
        case WhatIf::Nvfp4: return Fp8Metric::Nvfp4SnrDb;
    }
    return Fp8Metric::SnrDb;
}

std::optional<double> fp8_metric_value(const Fp8SlotSample& s, Fp8Metric metric) {
    const auto snr = [](const std::optional<float>& rel) -> std::optional<double> {
        if (!rel || !std::isfinite(*rel)) return std::nullopt;
        return snr_db(*rel);
    };
    switch (metric) {
        case Fp8Metric::Amax: return s.amax;
        case Fp8Metric::Scale: return s.scale;
        case Fp8Metric::Saturated: return s.saturated ? std::optional<double>(100.0 * *s.saturated) : std::nullopt;
        case Fp8Metric::Underflow: return s.underflow ? std::optional<double>(100.0 * *s.underflow) : std::nullopt;
        case Fp8Metric::SnrDb: return snr(s.rel_mse);
        case Fp8Metric::CurrentSnrDb: return snr(s.what_if(WhatIf::Current));
        case Fp8Metric::BlockSnrDb: return snr(s.what_if(WhatIf::Block));
        case Fp8Metric::Mxfp8SnrDb: return snr(s.what_if(WhatIf::Mxfp8));
        case Fp8Metric::Nvfp4SnrDb: return snr(s.what_if(WhatIf::Nvfp4));
    }
    return std::nullopt;
}

std::vector<Fp8SlotDigest> fp8_slot_digests(const RunRecord& record) {
    std::vector<Fp8SlotDigest> out;
    const auto median = [](const std::vector<double>& v) -> std::optional<double> {
        if (v.empty()) return std::nullopt;
        return median_of(v);
    };
    for (std::size_t i = 0; i < record.fp8_slots.size(); ++i) {
        std::vector<double> own;
        std::array<std::vector<double>, kWhatIfCount> what_if;
        std::optional<double> worst;
        for (const StepMetrics& step : record.steps) {
            if (step.phase != Phase::Timed || i >= step.fp8.size()) continue;
            const Fp8SlotSample& s = step.fp8[i];
            if (auto v = fp8_metric_value(s, Fp8Metric::SnrDb)) own.push_back(*v);
            for (std::size_t w = 0; w < kWhatIfCount; ++w) {
                if (auto v = fp8_metric_value(s, what_if_metric(kWhatIfs[w]))) what_if[w].push_back(*v);
            }
            if (s.saturated) worst = std::max(worst.value_or(0.0), static_cast<double>(*s.saturated));
        }
        Fp8SlotDigest d{record.fp8_slots[i], median(own), {}, worst, ""};
        for (std::size_t w = 0; w < kWhatIfCount; ++w) d.what_if_snr_db[w] = median(what_if[w]);
        // The best of those measured: records from before the microscaling what-ifs have only current and block.
        if (d.snr_db) {
            std::optional<std::size_t> best;
            for (std::size_t w = 0; w < kWhatIfCount; ++w) {
                if (d.what_if_snr_db[w] && (!best || *d.what_if_snr_db[w] > *d.what_if_snr_db[*best])) best = w;
            }
            if (best) {
                d.best = *d.snr_db >= *d.what_if_snr_db[*best] - 0.5 ? "this recipe" : std::string(what_if_title(kWhatIfs[*best]));
            }
        }
        out.push_back(std::move(d));
    }
    return out;
}

Fp8ScaleHistogram merged_block_scales(const RunRecord& record, SlotRole role) {
    std::vector<std::int64_t> counts(Fp8ScaleHistogram::kBins, 0);
    Fp8ScaleHistogram merged;
    for (std::size_t i = 0; i < record.fp8_block_scales.size() && i < record.fp8_slots.size(); ++i) {
        if (record.fp8_slots[i].role != role) continue;
        const Fp8ScaleHistogram& h = record.fp8_block_scales[i];
        for (std::size_t b = 0; b < h.counts.size(); ++b) {
            const auto bin = static_cast<std::size_t>(h.lowest_exponent - Fp8ScaleHistogram::kLowestExponent) + b;
            // Saturating: an imported record's counts are bounded (RecordJson), but not the number of its slots.
            if (bin < counts.size() && __builtin_add_overflow(counts[bin], h.counts[b], &counts[bin])) {
                counts[bin] = std::numeric_limits<std::int64_t>::max();
            }
        }
        if (__builtin_add_overflow(merged.empty_blocks, h.empty_blocks, &merged.empty_blocks)) {
            merged.empty_blocks = std::numeric_limits<std::int64_t>::max();
        }
    }
    const auto first = std::find_if(counts.begin(), counts.end(), [](std::int64_t c) { return c > 0; });
    const auto last = std::find_if(counts.rbegin(), counts.rend(), [](std::int64_t c) { return c > 0; }).base();
    if (first < last) {
        merged.lowest_exponent = Fp8ScaleHistogram::kLowestExponent + static_cast<int>(first - counts.begin());
        merged.counts.assign(first, last);
    }
    return merged;
}

std::optional<int> modal_binade(const Fp8ScaleHistogram& histogram) {
    const auto most = std::max_element(histogram.counts.begin(), histogram.counts.end());
    if (most == histogram.counts.end() || *most == 0) return std::nullopt;
    return histogram.lowest_exponent + static_cast<int>(most - histogram.counts.begin());
}

}  // namespace tewb

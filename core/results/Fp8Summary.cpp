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
    std::vector<double> snr[3][3];  // role × (this recipe, current, block)
    for (const StepMetrics& step : record.steps) {
        if (step.phase != Phase::Timed) continue;
        for (std::size_t i = 0; i < step.fp8.size() && i < record.fp8_slots.size(); ++i) {
            const Fp8SlotSample& s = step.fp8[i];
            const int r = static_cast<int>(std::find(std::begin(roles), std::end(roles), record.fp8_slots[i].role) - roles);
            if (r >= 3) continue;
            const std::optional<float> Fp8SlotSample::*fields[] = {&Fp8SlotSample::rel_mse, &Fp8SlotSample::current_rel_mse,
                                                                    &Fp8SlotSample::block_rel_mse};
            for (int k = 0; k < 3; ++k) {
                if (s.*fields[k] && std::isfinite(*(s.*fields[k]))) snr[r][k].push_back(snr_db(*(s.*fields[k])));
            }
        }
    }
    if (!snr[0][0].empty() || !snr[1][0].empty() || !snr[2][0].empty()) {
        const auto median = [](const std::vector<double>& v) { return v.empty() ? std::string("-") : format_significant(median_of(v)); };
        std::vector<std::vector<std::string>> snr_rows;
        for (int r = 0; r < 3; ++r) {
            snr_rows.push_back({std::string(to_string(roles[r])), median(snr[r][0]), median(snr[r][1]), median(snr[r][2])});
        }
        out << "quantization SNR in dB (median over the timed steps; higher is better):\n"
            << render_text_table({"slot", "this recipe", "what-if current", "what-if block"}, snr_rows);
    }
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
    }
    return "?";
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
        case Fp8Metric::CurrentSnrDb: return snr(s.current_rel_mse);
        case Fp8Metric::BlockSnrDb: return snr(s.block_rel_mse);
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
        std::vector<double> own, current, block;
        std::optional<double> worst;
        for (const StepMetrics& step : record.steps) {
            if (step.phase != Phase::Timed || i >= step.fp8.size()) continue;
            const Fp8SlotSample& s = step.fp8[i];
            if (auto v = fp8_metric_value(s, Fp8Metric::SnrDb)) own.push_back(*v);
            if (auto v = fp8_metric_value(s, Fp8Metric::CurrentSnrDb)) current.push_back(*v);
            if (auto v = fp8_metric_value(s, Fp8Metric::BlockSnrDb)) block.push_back(*v);
            if (s.saturated) worst = std::max(worst.value_or(0.0), static_cast<double>(*s.saturated));
        }
        Fp8SlotDigest d{record.fp8_slots[i], median(own), median(current), median(block), worst, ""};
        if (d.snr_db && d.current_snr_db && d.block_snr_db) {
            const double best = std::max({*d.snr_db, *d.current_snr_db, *d.block_snr_db});
            d.best = *d.snr_db >= best - 0.5 ? "this recipe" : *d.block_snr_db >= *d.current_snr_db ? "block scaling" : "current scaling";
        }
        out.push_back(std::move(d));
    }
    return out;
}

}  // namespace tewb

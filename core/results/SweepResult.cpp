#include "core/results/SweepResult.h"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "core/common/TextTable.h"
#include "core/model/FlopCount.h"
#include "core/results/Comparability.h"
#include "core/results/RecordCsv.h"

namespace tewb {

namespace {

std::string precision_label(Precision p, bool emulated) {
    std::string text(to_string(p));
    for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return tewb::precision_label(text, emulated);
}

}  // namespace

SweepResult analyze_sweep(const std::vector<SweepRun>& plan, const std::vector<std::optional<RunRecord>>& records) {
    SweepResult result;
    std::vector<SweepPoint> points;
    std::vector<double> flops;
    for (std::size_t i = 0; i < plan.size(); ++i) {
        const SweepRun& run = plan[i];
        if (std::find(points.begin(), points.end(), run.point) == points.end()) {
            points.push_back(run.point);
            flops.push_back(training_flops_per_step(run.config.model, run.config.batch));
        }
        if (!run.baseline && std::find(result.precisions.begin(), result.precisions.end(), run.config.precision) ==
                                 result.precisions.end()) {
            result.precisions.push_back(run.config.precision);
        }
        if (run.skip_reason) result.skipped.push_back(run.config.name + ": " + *run.skip_reason);
        if (i < records.size() && records[i]) {
            const RunRecord& r = *records[i];
            result.device = r.environment.device.has_gpu() ? r.environment.device.gpu_name : "CPU";
        }
        if (run.skip_reason) continue;
        ++result.runs_to_run;
        if (i >= records.size() || !records[i]) {
            ++result.runs_not_run;
        } else if (records[i]->status == RunStatus::Finished) {
            ++result.runs_finished;
        } else if (records[i]->status == RunStatus::Cancelled) {
            ++result.runs_cancelled;
        } else {
            ++result.runs_failed;
        }
    }
    std::vector<std::size_t> order(points.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return flops[a] < flops[b]; });
    for (const std::size_t k : order) {
        result.points.push_back(points[k]);
        result.flops.push_back(flops[k]);
    }
    const auto mean_ms_of = [&](std::size_t i, std::string& note) -> std::optional<double> {
        if (plan[i].skip_reason) {
            note = "skipped: " + *plan[i].skip_reason;
            return std::nullopt;
        }
        if (i >= records.size() || !records[i]) {
            note = "not run";
            return std::nullopt;
        }
        const RunRecord& r = *records[i];
        if (r.status != RunStatus::Finished) {  // a cancelled run's few steps are no measurement of the size
            note = std::string(to_string(r.status)) + (r.message.empty() ? "" : ": " + r.message);
            return std::nullopt;
        }
        return r.summary.mean_ms;
    };
    // "baseline: step times vary by 14.2 % ..." for a noisy run of the plan, else nothing.
    const auto noise_of = [&](std::size_t i) -> std::string {
        if (i >= records.size() || !records[i] || !is_noisy(records[i]->execution.quality)) return {};
        return (plan[i].baseline ? std::string("baseline: ") : std::string()) + quality_reasons_text(records[i]->execution.quality);
    };
    for (const SweepPoint& point : result.points) {
        std::optional<double> baseline_ms;
        std::string baseline_note;
        std::string baseline_noise;
        const RunRecord* baseline_record = nullptr;
        for (std::size_t i = 0; i < plan.size(); ++i) {
            if (plan[i].point == point && plan[i].baseline) {
                baseline_ms = mean_ms_of(i, baseline_note);
                baseline_noise = noise_of(i);
                if (i < records.size() && records[i]) baseline_record = &*records[i];
            }
        }
        for (const Precision p : result.precisions) {
            SweepCell cell;
            cell.point = point;
            cell.precision = p;
            cell.baseline_ms = baseline_ms;
            bool comparable = true;
            for (std::size_t i = 0; i < plan.size(); ++i) {
                if (plan[i].point != point || plan[i].baseline || plan[i].config.precision != p) continue;
                cell.ms = mean_ms_of(i, cell.note);
                if (i < records.size() && records[i]) cell.emulated = records[i]->execution.fp8_emulated;
                cell.noisy_reasons = noise_of(i);
                // The same rule as every other table: a size's runs are planned alike, so this holds unless a record
                // was changed or the plan broke it (records of another model or device kind under this size).
                if (cell.ms && baseline_ms && baseline_record && i < records.size() && records[i]) {
                    const Comparability c = comparability(*records[i], *baseline_record);
                    if (!c.comparable()) {
                        cell.note = not_comparable_words(c.differences);
                        comparable = false;
                    }
                }
            }
            if (!baseline_noise.empty()) {
                if (!cell.noisy_reasons.empty()) cell.noisy_reasons += "; ";
                cell.noisy_reasons += baseline_noise;
            }
            cell.noisy = !cell.noisy_reasons.empty();
            if (comparable && cell.ms && baseline_ms && *cell.ms > 0) cell.speedup = *baseline_ms / *cell.ms;
            if (!baseline_ms && cell.note.empty()) cell.note = "baseline: " + (baseline_note.empty() ? "no time" : baseline_note);
            result.any_emulated = result.any_emulated || cell.emulated;
            result.cells.push_back(std::move(cell));
        }
    }
    return result;
}

std::optional<std::size_t> SweepResult::break_even_point(std::size_t precision) const {
    std::optional<std::size_t> from;
    for (std::size_t k = 0; k < points.size(); ++k) {
        const std::optional<double>& s = cell(k, precision).speedup;
        if (!s) continue;
        if (*s >= 1.0) {
            if (!from) from = k;
        } else {
            from.reset();
        }
    }
    return from;
}

std::vector<std::string> SweepResult::break_even_statements() const {
    std::vector<std::string> out;
    for (std::size_t p = 0; p < precisions.size(); ++p) {
        bool emulated = false;
        std::vector<std::size_t> measured;
        for (std::size_t k = 0; k < points.size(); ++k) {
            if (cell(k, p).speedup) measured.push_back(k);
            emulated = emulated || cell(k, p).emulated;
        }
        const std::string name = precision_label(precisions[p], emulated);
        if (measured.empty()) {
            out.push_back(name + ": no size was measured, so there is no break-even to state.");
            continue;
        }
        if (emulated) {
            // The emulation's cost is not FP8's speed: no break-even, no "pays", no "slower".
            out.push_back(name + ": its FP8 GEMMs are emulated here (in higher precision), so its times are the emulation's "
                                 "cost, not FP8's speed; no break-even is stated. Run the sweep on a GPU of compute "
                                 "capability 8.9 or newer to measure FP8.");
            continue;
        }
        const std::optional<std::size_t> from = break_even_point(p);
        const auto at = [&](std::size_t k) {
            return format_fixed(cell(k, p).speedup, 2, "x") + " at " + points[k].label();
        };
        std::string text;
        if (!from) {
            std::size_t best = measured.front();
            for (const std::size_t k : measured) {
                if (*cell(k, p).speedup > *cell(best, p).speedup) best = k;
            }
            text = name + " does not pay on this grid: slower than the baseline at the largest measured size (" +
                   at(measured.back()) + "); best " + at(best) + ".";
        } else if (*from == measured.front()) {
            text = name + " pays at every measured size: from " + at(measured.front()) + " to " + at(measured.back()) + ".";
        } else {
            const auto below = std::find(measured.begin(), measured.end(), *from) - 1;
            text = name + " pays from " + points[*from].label() + " on (" + format_fixed(cell(*from, p).speedup, 2, "x") +
                   "); below that it is slower (" + at(*below) + ").";
        }
        const auto noisy_at = std::count_if(measured.begin(), measured.end(), [&](std::size_t k) { return cell(k, p).noisy; });
        if (noisy_at > 0) {
            text += ' ';  // not " " + std::to_string(...): GCC 12 warns falsely (-Wrestrict) on that
            text += std::to_string(noisy_at) + " of these sizes were measured noisily, so this is not clean evidence; " +
                    "measure them again on an idle machine.";
        }
        if (measured.size() < points.size()) {
            text += " Measured at " + std::to_string(measured.size()) + " of " + std::to_string(points.size()) +
                    " sizes; the others have no time (skipped, cancelled, failed or not run).";
        }
        out.push_back(text);
    }
    return out;
}

std::optional<std::string> SweepResult::cut_short_statement() const {
    if (runs_finished == runs_to_run) return std::nullopt;
    std::vector<std::string> parts;
    if (runs_cancelled > 0) parts.push_back(std::to_string(runs_cancelled) + " cancelled");
    if (runs_failed > 0) parts.push_back(std::to_string(runs_failed) + " failed");
    if (runs_not_run > 0) parts.push_back(std::to_string(runs_not_run) + " not run");
    std::string list;
    for (const std::string& part : parts) list += (list.empty() ? "" : ", ") + part;
    return "Sweep cut short: " + std::to_string(runs_finished) + " of " + std::to_string(runs_to_run) + " runs finished (" + list +
           "); only finished runs are counted.";
}

std::string render_sweep_table(const SweepResult& result) {
    if (result.precisions.empty()) return "Nothing to compare with the baseline.\n";
    std::vector<std::string> header{"hidden", "batch", "seq", "GFLOP/step", "baseline ms"};
    for (const Precision p : result.precisions) {
        bool emulated = false;
        for (const SweepCell& c : result.cells) emulated = emulated || (c.precision == p && c.emulated);
        header.push_back(precision_label(p, emulated) + " ms");
        header.push_back("speedup");
    }
    std::vector<std::vector<std::string>> rows;
    for (std::size_t k = 0; k < result.points.size(); ++k) {
        const SweepPoint& pt = result.points[k];
        std::vector<std::string> row{std::to_string(pt.hidden), std::to_string(pt.batch), std::to_string(pt.seq),
                                     format_fixed(result.flops[k] / 1e9, 1),
                                     format_fixed(result.cell(k, 0).baseline_ms, 2)};
        for (std::size_t p = 0; p < result.precisions.size(); ++p) {
            const SweepCell& c = result.cell(k, p);
            row.push_back(c.ms ? format_fixed(c.ms, 2) : (c.note.rfind("skipped", 0) == 0 ? "skipped" : "-"));
            row.push_back(c.emulated && c.speedup ? std::string(kEmulatedSpeedup)
                          : c.noisy && c.speedup     ? format_fixed(c.speedup, 2, "x noisy")
                                                     : format_fixed(c.speedup, 2, "x"));
        }
        rows.push_back(std::move(row));
    }
    std::string text = render_text_table(header, rows);
    if (const std::optional<std::string> cut = result.cut_short_statement()) text += *cut + "\n";
    for (const std::string& s : result.break_even_statements()) text += s + "\n";
    for (const SweepCell& c : result.cells) {
        if (!c.noisy || !c.speedup) continue;
        text += "noisy: " + precision_label(c.precision, c.emulated) + " at " + c.point.label() + ": " + c.noisy_reasons + "\n";
    }
    if (!result.skipped.empty()) {
        text += "Skipped:\n";
        for (const std::string& s : result.skipped) text += "  " + s + "\n";
    }
    return text;
}

namespace {

std::string join_note(const std::string& note, const std::string& more) {
    return note.empty() ? more : note + "; " + more;
}

}  // namespace

std::string sweep_csv_text(const SweepResult& result) {
    std::ostringstream out;
    out << "hidden,batch,seq,flops_per_step,precision,ms,baseline_ms,speedup,fp8_emulated,note,noisy,noisy_reasons\n";
    const auto number = [](const std::optional<double>& v) { return v ? format_fixed(v, 6) : std::string(); };
    for (std::size_t k = 0; k < result.points.size(); ++k) {
        for (std::size_t p = 0; p < result.precisions.size(); ++p) {
            const SweepCell& c = result.cell(k, p);
            out << c.point.hidden << ',' << c.point.batch << ',' << c.point.seq << ',' << format_fixed(result.flops[k], 0) << ','
                << csv_field(to_string(c.precision)) << ',' << number(c.ms) << ',' << number(c.baseline_ms) << ','
                << number(c.emulated ? std::nullopt : c.speedup) << ',' << (c.emulated ? "true" : "false") << ','
                << csv_field(c.emulated && c.speedup ? join_note(c.note, emulated_speedup_reason()) : c.note) << ','
                << (c.noisy ? "true" : "false") << ',' << csv_field(c.noisy_reasons) << '\n';
        }
    }
    return out.str();
}

}  // namespace tewb

#include "core/results/SweepResult.h"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "core/common/TextTable.h"
#include "core/model/FlopCount.h"
#include "core/results/Comparability.h"
#include "core/results/RunGroups.h"
#include "core/results/RecordCsv.h"
#include "core/results/RunWords.h"

namespace tewb {

namespace {

std::string precision_label(Precision p, bool emulated) {
    std::string text(to_string(p));
    for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return tewb::precision_label(text, emulated);
}

}  // namespace

namespace {

// A run of the plan as group_runs sees it: its record, with the plan's repeat series when there are repeats (one
// group per configuration and size, named by the configuration's place in the plan).
RunRecord as_member(const SweepRun& run, const RunRecord& record, const std::string& series) {
    RunRecord r = record;
    r.repeat = run.repeats > 1 ? std::optional<RepeatInfo>(RepeatInfo{series, run.repeat, run.repeats}) : std::nullopt;
    return r;
}

// Why the plan's run `i` gave no time, or nothing when it did.
std::optional<std::string> missing_time(const std::vector<SweepRun>& plan, const std::vector<std::optional<RunRecord>>& records,
                                        std::size_t i) {
    if (plan[i].skip_reason) return "skipped: " + *plan[i].skip_reason;
    if (i >= records.size() || !records[i]) return "not run";
    const RunRecord& r = *records[i];
    // A cancelled run's few steps are no measurement of the size.
    if (r.status != RunStatus::Finished) return std::string(to_string(r.status)) + (r.message.empty() ? "" : ": " + r.message);
    return std::nullopt;
}

}  // namespace

SweepVerdict SweepCell::verdict() const {
    if (!speedup || emulated) return SweepVerdict::None;
    if (noisy || !significant()) return SweepVerdict::Unclear;
    return *speedup >= 1.0 ? SweepVerdict::Pays : SweepVerdict::Slower;
}

std::string sweep_speedup_text(const SweepCell& c, std::string_view times) {
    if (!c.speedup) return "-";
    if (c.emulated) return std::string(kEmulatedSpeedup);
    std::string text = format_fixed(c.speedup, 2, std::string(times));
    if (c.speedup_ci) text += " [" + format_fixed(c.speedup_ci->lo, 2) + "-" + format_fixed(c.speedup_ci->hi, 2) + "]";
    if (!c.significant()) text += " not significant";
    if (c.noisy) text += c.significant() ? " noisy" : ", noisy";
    return text;
}

SweepResult analyze_sweep(const std::vector<SweepRun>& plan, const std::vector<std::optional<RunRecord>>& records) {
    SweepResult result;
    std::vector<SweepPoint> points;
    std::vector<double> flops;
    for (std::size_t i = 0; i < plan.size(); ++i) {
        const SweepRun& run = plan[i];
        result.repeats = std::max(result.repeats, run.repeats);
        if (std::find(points.begin(), points.end(), run.point) == points.end()) {
            points.push_back(run.point);
            flops.push_back(training_flops_per_step(run.config.model, run.config.batch));
        }
        if (!run.baseline && std::find(result.precisions.begin(), result.precisions.end(), run.config.precision) ==
                                 result.precisions.end()) {
            result.precisions.push_back(run.config.precision);
        }
        if (run.baseline && result.baseline.empty()) {
            result.baseline = std::string(to_string(run.config.backend)) + " " + std::string(to_string(run.config.precision));
        }
        if (run.skip_reason && run.repeat == 1) result.skipped.push_back(run.config.name + ": " + *run.skip_reason);
        if (!run.baseline && run.config.precision == Precision::Fp8 && is_microscaling(run.config.fp8.scaling)) {
            result.microscaling = true;
        }
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
    // "baseline: step times vary by 14.2 % ..." for each noisy run among `indices`, joined.
    const auto noise_of = [&](const std::vector<std::size_t>& indices, bool baseline) {
        std::string text;
        for (const std::size_t i : indices) {
            if (i >= records.size() || !records[i] || !is_noisy(records[i]->execution.quality)) continue;
            if (!text.empty()) text += "; ";
            text += (baseline ? std::string("baseline: ") : std::string()) + quality_reasons_text(records[i]->execution.quality);
        }
        return text;
    };
    for (const SweepPoint& point : result.points) {
        // The size's runs that gave a time, as group_runs' members: the baseline's, then each precision's.
        std::vector<std::size_t> baseline_runs;
        std::vector<std::vector<std::size_t>> precision_runs(result.precisions.size());
        for (std::size_t i = 0; i < plan.size(); ++i) {
            if (plan[i].point != point) continue;
            if (plan[i].baseline) {
                baseline_runs.push_back(i);
                continue;
            }
            const auto p = std::find(result.precisions.begin(), result.precisions.end(), plan[i].config.precision);
            precision_runs[static_cast<std::size_t>(p - result.precisions.begin())].push_back(i);
        }
        std::vector<RunRecord> members;
        std::vector<std::size_t> member_of;  // plan index of each member
        const auto enlist = [&](const std::vector<std::size_t>& indices, const std::string& series) {
            for (const std::size_t i : indices) {
                if (missing_time(plan, records, i)) continue;
                members.push_back(as_member(plan[i], *records[i], series));
                member_of.push_back(i);
            }
        };
        enlist(baseline_runs, "baseline");
        const std::size_t baseline_members = members.size();
        for (std::size_t p = 0; p < precision_runs.size(); ++p) enlist(precision_runs[p], "precision " + std::to_string(p));
        const std::vector<RunGroup> groups =
            group_runs(members, baseline_members > 0 ? std::optional<std::size_t>(0) : std::nullopt);
        const auto group_of = [&](const std::vector<std::size_t>& indices) -> const RunGroup* {
            for (const RunGroup& g : groups) {
                for (const std::size_t m : g.members) {
                    if (std::find(indices.begin(), indices.end(), member_of[m]) != indices.end()) return &g;
                }
            }
            return nullptr;
        };
        const RunGroup* base = group_of(baseline_runs);
        std::string baseline_note;
        if (!base && !baseline_runs.empty()) baseline_note = *missing_time(plan, records, baseline_runs.front());
        const std::string baseline_noise = noise_of(baseline_runs, true);
        for (std::size_t p = 0; p < result.precisions.size(); ++p) {
            SweepCell cell;
            cell.point = point;
            cell.precision = result.precisions[p];
            if (base) cell.baseline_ms = base->centre_ms;
            const RunGroup* g = group_of(precision_runs[p]);
            for (const std::size_t i : precision_runs[p]) {
                if (i < records.size() && records[i]) cell.emulated = cell.emulated || records[i]->execution.fp8_emulated;
            }
            if (!g) {
                cell.note = precision_runs[p].empty() ? std::string("not planned") : *missing_time(plan, records, precision_runs[p].front());
            } else {
                cell.ms = g->centre_ms;
                cell.basis = g->sample_basis();
                if (!g->not_comparable.empty()) {
                    cell.note = not_comparable_words(g->not_comparable);
                } else if (base) {
                    cell.speedup = g->speedup;
                    cell.speedup_ci = g->speedup_ci;
                }
            }
            cell.noisy_reasons = noise_of(precision_runs[p], false);
            if (!baseline_noise.empty()) {
                if (!cell.noisy_reasons.empty()) cell.noisy_reasons += "; ";
                cell.noisy_reasons += baseline_noise;
            }
            cell.noisy = !cell.noisy_reasons.empty();
            if (!base && cell.note.empty()) cell.note = "baseline: " + (baseline_note.empty() ? "no time" : baseline_note);
            result.any_emulated = result.any_emulated || cell.emulated;
            result.cells.push_back(std::move(cell));
        }
    }
    return result;
}

std::optional<std::size_t> SweepResult::break_even_point(std::size_t precision) const {
    std::optional<std::size_t> from;
    for (std::size_t k = 0; k < points.size(); ++k) {
        const SweepVerdict v = cell(k, precision).verdict();
        if (v == SweepVerdict::None) continue;
        if (v == SweepVerdict::Pays) {
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
        std::vector<std::size_t> measured;  // sizes with a verdict
        std::size_t unclear = 0, noisy = 0;
        for (std::size_t k = 0; k < points.size(); ++k) {
            const SweepCell& c = cell(k, p);
            emulated = emulated || c.emulated;
            if (c.verdict() == SweepVerdict::None) continue;
            measured.push_back(k);
            if (c.verdict() == SweepVerdict::Unclear) ++unclear;
            if (c.noisy) ++noisy;
        }
        const std::string name = precision_label(precisions[p], emulated);
        if (emulated) {
            // The emulation's cost is not FP8's speed: no break-even, no "pays", no "slower".
            out.push_back(emulated_break_even_sentence(name, microscaling && precisions[p] == Precision::Fp8));
            continue;
        }
        if (measured.empty()) {
            out.push_back(name + ": no size was measured, so there is no break-even to state.");
            continue;
        }
        const std::optional<std::size_t> from = break_even_point(p);
        const auto at = [&](std::size_t k) { return sweep_speedup_text(cell(k, p)) + " at " + points[k].label(); };
        std::string text;
        if (unclear == measured.size()) {
            text = name + ": no size gives a clear answer (from " + at(measured.front()) + " to " + at(measured.back()) + ").";
        } else if (!from) {
            std::size_t best = measured.front();
            for (const std::size_t k : measured) {
                if (*cell(k, p).speedup > *cell(best, p).speedup) best = k;
            }
            const bool slower = cell(measured.back(), p).verdict() == SweepVerdict::Slower;
            text = name + (slower ? " does not pay on this grid: at the largest measured size it is slower than the baseline ("
                                  : " has no clear break-even on this grid: at the largest measured size it is not clearly "
                                    "faster (") +
                   at(measured.back()) + "); best " + at(best) + ".";
        } else if (*from == measured.front()) {
            text = name + " pays at every measured size: from " + at(measured.front()) + " to " + at(measured.back()) + ".";
        } else {
            const auto below = std::find(measured.begin(), measured.end(), *from) - 1;
            text = name + " pays from " + points[*from].label() + " on (" + sweep_speedup_text(cell(*from, p)) +
                   "); below that it is slower or not clearly faster (" + at(*below) + ").";
        }
        if (unclear > 0 && unclear < measured.size()) {
            text += ' ';  // not " " + std::to_string(...): GCC 12 warns falsely (-Wrestrict) on that
            text += std::to_string(unclear) + " of these sizes count as neither: their 95% interval contains 1";
            text += noisy > 0 ? " or they were measured noisily." : ".";
        }
        if (unclear > 0) {
            text += repeats > 1 ? " Run them again on an idle machine, or with more repeats, to settle them."
                                : " Run the sweep again with repeats (--repeat 3; the Sweep tab's Repeats) on an idle "
                                  "machine to settle them.";
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
    std::vector<std::string> header{"hidden", "batch", "seq", "GFLOP/step",
                                    result.baseline.empty() ? "baseline ms" : "baseline " + result.baseline + " ms"};
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
            row.push_back(sweep_speedup_text(c));
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

const char* verdict_name(SweepVerdict v) {
    switch (v) {
        case SweepVerdict::Pays: return "pays";
        case SweepVerdict::Slower: return "slower";
        case SweepVerdict::Unclear: return "unclear";
        case SweepVerdict::None: break;
    }
    return "none";
}

}  // namespace

std::string sweep_csv_text(const SweepResult& result) {
    std::ostringstream out;
    out << "hidden,batch,seq,flops_per_step,precision,ms,baseline_ms,speedup,fp8_emulated,note,noisy,noisy_reasons,"
           "speedup_ci_lo,speedup_ci_hi,significant,verdict,basis,baseline\n";
    const auto number = [](const std::optional<double>& v) { return v ? format_fixed(v, 6) : std::string(); };
    for (std::size_t k = 0; k < result.points.size(); ++k) {
        for (std::size_t p = 0; p < result.precisions.size(); ++p) {
            const SweepCell& c = result.cell(k, p);
            out << c.point.hidden << ',' << c.point.batch << ',' << c.point.seq << ',' << format_fixed(result.flops[k], 0) << ','
                << csv_field(to_string(c.precision)) << ',' << number(c.ms) << ',' << number(c.baseline_ms) << ','
                << number(c.emulated ? std::nullopt : c.speedup) << ',' << (c.emulated ? "true" : "false") << ','
                << csv_field(c.emulated && c.speedup ? join_note(c.note, emulated_speedup_reason()) : c.note) << ','
                << (c.noisy ? "true" : "false") << ',' << csv_field(c.noisy_reasons) << ','
                << number(c.speedup_ci && !c.emulated ? std::optional<double>(c.speedup_ci->lo) : std::nullopt) << ','
                << number(c.speedup_ci && !c.emulated ? std::optional<double>(c.speedup_ci->hi) : std::nullopt) << ','
                << (c.significant() && !c.emulated ? "true" : "false") << ',' << verdict_name(c.verdict()) << ','
                << csv_field(c.basis) << ',' << csv_field(result.baseline) << '\n';
        }
    }
    return out.str();
}

}  // namespace tewb

#include "core/results/RecordCsv.h"

#include "core/results/RunGroups.h"

#include <sstream>

#include "core/common/NumberText.h"
#include "core/results/Comparability.h"
#include "core/results/Comparison.h"

namespace tewb {

namespace {

std::string csv_number(double value) {
    return shortest_text(value);
}

std::string csv_number(const std::optional<double>& value) {
    return value ? csv_number(*value) : std::string{};
}

std::string csv_number(float value) {
    return shortest_text(value);
}

std::string csv_number(const std::optional<float>& value) {
    return value ? csv_number(*value) : std::string{};
}

}  // namespace

std::string csv_field(std::string_view text) {
    // Spreadsheets run a cell that starts with one of these as a formula (=HYPERLINK(...), =cmd|...), and a
    // leading ' is their own way of saying "this is text".
    const bool formula = !text.empty() && std::string_view("=+-@\t\r").find(text.front()) != std::string_view::npos;
    std::string cell = formula ? "'" : "";
    cell += text;
    if (cell.find_first_of(",\"\r\n") == std::string::npos) {
        return cell;
    }
    std::string quoted = "\"";
    for (const char c : cell) {
        quoted += c;
        if (c == '"') {
            quoted += '"';
        }
    }
    return quoted + "\"";
}

namespace {

// ",forward,backward,communication,optimizer,fp8" in ms, empty fields where the step (or run) was not split.
std::string breakdown_fields(const std::optional<StepBreakdown>& b) {
    std::string out;
    for (const StepSegment segment : kStepSegments) {
        out += ',';
        if (b) out += csv_number(std::optional<double>(b->at(segment)));
    }
    return out;
}

}  // namespace

void write_steps_csv(std::ostream& out, const std::vector<RunRecord>& runs) {
    out << "run_id,run_name,backend,precision,device,step,phase,loss,step_ms,mem_bytes,tokens_per_s,elapsed_ms,forward_ms,"
           "backward_ms,communication_ms,optimizer_ms,fp8_ms,val_loss\n";
    for (const RunRecord& run : runs) {
        const std::string prefix = csv_field(run.id) + "," + csv_field(display_name(run)) + "," +
                                   csv_field(to_string(run.config.backend)) + "," +
                                   csv_field(to_string(run.config.precision)) + "," + csv_field(run.execution.device) + ",";
        for (const StepMetrics& s : run.steps) {
            out << prefix << s.step << ',' << csv_field(to_string(s.phase)) << ',' << csv_number(s.loss) << ','
                << csv_number(s.step_ms) << ',' << s.mem_bytes << ',' << csv_number(s.tokens_per_s) << ',' << csv_number(s.elapsed_ms)
                << breakdown_fields(s.breakdown) << ',' << csv_number(s.val_loss) << '\n';
        }
    }
}

namespace {

// Every call a fused te step handed to the reference; empty where no te path was recorded (torch runs, old records).
std::string fallback_calls(const Execution& e) {
    if (e.te_impl.empty()) return {};
    std::int64_t calls = 0;
    for (const Fallback& f : e.fallbacks) calls += f.count;
    return std::to_string(calls);
}

// ",cv,others_cpu_cores,load_average,noisy,noisy_reasons": where the record has no measurement quality the
// figures and `noisy` stay empty (not measured is not "false") and the reason says it was not recorded.
std::string quality_fields(const std::optional<MeasurementQuality>& q) {
    std::string out = ",";
    if (q) {
        out += csv_number(q->cv) + ',' + csv_number(q->others_cpu_cores) + ',' + csv_number(q->load_average) + ',';
        out += q->noisy ? "true" : "false";
    } else {
        out += ",,,";
    }
    return out + ',' + csv_field(quality_reasons_text(q));
}

}  // namespace

void write_summary_csv(std::ostream& out, const std::vector<RunRecord>& runs, std::optional<std::size_t> baseline) {
    out << "run_id,run_name,backend,precision,device,implementation,fp8_emulated,te_impl,fallback_calls,status,timed_steps,"
           "mean_ms,median_ms,p90_ms,"
           "tokens_per_s,tflops,mfu,peak_mem_bytes,memory_metric,final_loss,final_val_loss,speedup,memory_ratio,"
           "repeat_group,repeat_index,repeat_count,group_ms,group_ms_min,group_ms_max,group_ms_ci_lo,group_ms_ci_hi,"
           "group_speedup,group_speedup_ci_lo,group_speedup_ci_hi,group_speedup_significant,forward_ms,backward_ms,"
           "communication_ms,optimizer_ms,fp8_ms,breakdown_source,speedup_note,cv,others_cpu_cores,load_average,noisy,"
           "noisy_reasons\n";
    const std::vector<RunGroup> groups = group_runs(runs, baseline);
    std::vector<const RunGroup*> group_of(runs.size(), nullptr);
    for (const RunGroup& g : groups) {
        for (const std::size_t i : g.members) group_of[i] = &g;
    }
    const auto interval = [](const std::optional<Interval>& v, bool hi) {
        return v ? csv_number(std::optional<double>(hi ? v->hi : v->lo)) : std::string();
    };
    std::size_t index = 0;
    for (const ComparisonRow& row : compare_runs(runs, baseline)) {
        const RunRecord& r = *row.run;
        const RunSummary& s = r.summary;
        const RunGroup& g = *group_of[index++];
        // An emulated run's ratio is the emulation's cost: its speedup cells stay empty and the last column says why.
        const bool withheld = row.emulated || g.emulated;
        std::optional<double> speedup;
        std::optional<double> group_speedup;
        std::optional<Interval> group_ci;
        std::string note;
        if (!withheld) {
            speedup = row.speedup;
            group_speedup = g.speedup;
            group_ci = g.speedup_ci;
        } else if (row.speedup || g.speedup) {
            note = emulated_speedup_reason();
        }
        if (!row.not_comparable.empty()) {
            note = not_comparable_words(row.not_comparable);
        } else if (row.per_token && speedup) {
            note = "per token: another process count than the baseline's, tokens per second compared";
        }
        out << csv_field(r.id) << ',' << csv_field(display_name(r)) << ',' << csv_field(to_string(r.config.backend)) << ','
            << csv_field(to_string(r.config.precision)) << ',' << csv_field(r.execution.device) << ','
            << csv_field(r.execution.implementation) << ',' << (r.execution.fp8_emulated ? "true" : "false") << ','
            << csv_field(r.execution.te_impl) << ',' << fallback_calls(r.execution) << ','
            << csv_field(to_string(r.status)) << ',' << s.timed_steps << ','
            << csv_number(s.mean_ms) << ',' << csv_number(s.median_ms) << ',' << csv_number(s.p90_ms) << ',' << csv_number(s.tokens_per_s) << ','
            << csv_number(s.tflops) << ',' << csv_number(s.mfu) << ',' << s.peak_mem_bytes << ','
            << csv_field(to_string(r.execution.memory_metric)) << ',' << csv_number(s.final_loss) << ',' << csv_number(s.final_val_loss)
            << ',' << csv_number(speedup) << ','
            << csv_number(row.memory_ratio) << ','
            << (r.repeat ? csv_field(r.repeat->group) : "") << ',' << (r.repeat ? std::to_string(r.repeat->index) : "") << ','
            << (r.repeat ? std::to_string(r.repeat->count) : "") << ',' << csv_number(g.centre_ms) << ',' << csv_number(g.min_ms)
            << ',' << csv_number(g.max_ms) << ',' << interval(g.centre_ci, false) << ',' << interval(g.centre_ci, true) << ','
            << csv_number(group_speedup) << ',' << interval(group_ci, false) << ',' << interval(group_ci, true) << ','
            << (group_ci ? (g.significant() ? "true" : "false") : "") << breakdown_fields(s.breakdown) << ','
            << csv_field(s.breakdown_source) << ',' << csv_field(note) << quality_fields(r.execution.quality) << '\n';
    }
}

void write_fp8_csv(std::ostream& out, const std::vector<RunRecord>& runs) {
    out << "run_id,run_name,step,phase,module,slot,dtype,amax,scale,saturated_fraction,underflow_fraction,rel_mse,snr_db";
    for (const WhatIf w : kWhatIfs) out << ',' << to_string(w) << "_rel_mse," << to_string(w) << "_snr_db";
    out << '\n';
    const auto snr = [](const std::optional<float>& rel_mse) {
        return rel_mse ? csv_number(std::optional<double>(snr_db(*rel_mse))) : std::string();
    };
    for (const RunRecord& run : runs) {
        const std::string prefix = csv_field(run.id) + "," + csv_field(display_name(run)) + ",";
        for (const StepMetrics& s : run.steps) {
            for (std::size_t i = 0; i < s.fp8.size() && i < run.fp8_slots.size(); ++i) {
                const Fp8SlotInfo& slot = run.fp8_slots[i];
                const Fp8SlotSample& sample = s.fp8[i];
                out << prefix << s.step << ',' << csv_field(to_string(s.phase)) << ',' << csv_field(slot.module) << ','
                    << csv_field(to_string(slot.role)) << ',' << csv_field(to_string(slot.dtype)) << ','
                    << csv_number(sample.amax) << ',' << csv_number(sample.scale) << ',' << csv_number(sample.saturated) << ','
                    << csv_number(sample.underflow) << ',' << csv_number(sample.rel_mse) << ',' << snr(sample.rel_mse);
                for (const WhatIf w : kWhatIfs) out << ',' << csv_number(sample.what_if(w)) << ',' << snr(sample.what_if(w));
                out << '\n';
            }
        }
    }
}

// One row per binade of each slot's histogram (the binades between a slot's lowest and highest used, zeros
// included), and one row per slot for its blocks without a scale (binade empty).
void write_block_scales_csv(std::ostream& out, const std::vector<RunRecord>& runs) {
    out << "run_id,run_name,module,slot,dtype,scale_binade_log2,blocks\n";
    for (const RunRecord& run : runs) {
        const std::string prefix = csv_field(run.id) + "," + csv_field(display_name(run)) + ",";
        for (std::size_t i = 0; i < run.fp8_block_scales.size() && i < run.fp8_slots.size(); ++i) {
            const Fp8SlotInfo& slot = run.fp8_slots[i];
            const std::string where = prefix + csv_field(slot.module) + "," + csv_field(to_string(slot.role)) + "," +
                                      csv_field(to_string(slot.dtype)) + ",";
            const Fp8ScaleHistogram& h = run.fp8_block_scales[i];
            for (std::size_t b = 0; b < h.counts.size(); ++b) {
                out << where << h.lowest_exponent + static_cast<int>(b) << ',' << h.counts[b] << '\n';
            }
            out << where << ',' << h.empty_blocks << '\n';
        }
    }
}

std::string steps_csv_text(const std::vector<RunRecord>& runs) {
    std::ostringstream out;
    write_steps_csv(out, runs);
    return out.str();
}

std::string summary_csv_text(const std::vector<RunRecord>& runs, std::optional<std::size_t> baseline) {
    std::ostringstream out;
    write_summary_csv(out, runs, baseline);
    return out.str();
}

std::string block_scales_csv_text(const std::vector<RunRecord>& runs) {
    std::ostringstream out;
    write_block_scales_csv(out, runs);
    return out.str();
}

std::string fp8_csv_text(const std::vector<RunRecord>& runs) {
    std::ostringstream out;
    write_fp8_csv(out, runs);
    return out.str();
}

}  // namespace tewb

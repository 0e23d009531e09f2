#include "core/results/Comparison.h"

#include "core/common/TextCheck.h"
#include "core/common/TextTable.h"
#include "core/results/Comparability.h"
#include "core/results/RunWords.h"

namespace tewb {

std::vector<ComparisonRow> compare_runs(const std::vector<RunRecord>& runs, std::optional<std::size_t> baseline) {
    std::vector<ComparisonRow> rows;
    const RunRecord* base = baseline && *baseline < runs.size() ? &runs[*baseline] : nullptr;
    for (const RunRecord& run : runs) {
        ComparisonRow row;
        row.run = &run;
        row.emulated = run.execution.fp8_emulated;
        if (base != nullptr) {
            row.emulated_format_memory =
                row.emulated && run.config.precision == Precision::Fp8 && is_microscaling(run.config.fp8.scaling);
            row.not_comparable = speedup_obstacles(run, *base);
            if (!row.not_comparable.empty()) {
                rows.push_back(row);
                continue;
            }
            // The baseline against itself is exactly 1 however its steps varied.
            row.noisy = &run != base && (is_noisy(run.execution.quality) || is_noisy(base->execution.quality));
            const double tokens = &run == base ? 1.0 : comparability(run, *base).token_ratio;
            row.per_token = tokens != 1.0;
            if (base->summary.mean_ms && run.summary.mean_ms && *run.summary.mean_ms > 0) {
                row.speedup = *base->summary.mean_ms / *run.summary.mean_ms * tokens;
            }
            if (base->summary.peak_mem_bytes > 0 && run.summary.peak_mem_bytes > 0 && !row.emulated_format_memory) {
                row.memory_ratio =
                    static_cast<double>(run.summary.peak_mem_bytes) / static_cast<double>(base->summary.peak_mem_bytes);
            }
        }
        rows.push_back(row);
    }
    return rows;
}

std::string render_summary_table(const std::vector<RunRecord>& runs, std::optional<std::size_t> baseline) {
    const std::vector<ComparisonRow> comparison = compare_runs(runs, baseline);
    std::vector<std::vector<std::string>> rows;
    for (const ComparisonRow& row : comparison) {
        const RunRecord& r = *row.run;
        const RunSummary& s = r.summary;
        std::string status(to_string(r.status));
        const std::string precision = precision_label(to_string(r.config.precision), r.execution.fp8_emulated);
        rows.push_back({display_name(r), std::string(to_string(r.config.backend)), precision,
                        r.execution.device, status, format_fixed(s.mean_ms, 2), format_fixed(s.median_ms, 2),
                        format_fixed(s.p90_ms, 2), quality_cell(r.execution.quality), format_fixed(s.tokens_per_s, 0),
                        format_tflops(s.tflops),
                        s.mfu ? format_fixed(*s.mfu * 100.0, 1, "%") : "-",
                        s.peak_mem_bytes == 0                                   ? "-"
                        : r.execution.memory_metric == MemoryMetric::CpuPeakRss ? format_bytes(s.peak_mem_bytes) + " RSS"
                                                                                : format_bytes(s.peak_mem_bytes),
                        format_fixed(s.final_loss, 4),
                        !row.not_comparable.empty() ? std::string(kNotComparable)
                        : row.emulated && row.speedup ? std::string(kEmulatedSpeedup)
                        : row.speedup ? format_fixed(row.speedup, 2, "x") + (row.per_token ? " per token" : "") + (row.noisy ? " noisy" : "")
                                      : "-",
                        row.memory_ratio ? format_fixed(row.memory_ratio, 2, "x") : "-"});
    }
    return render_text_table({"run", "backend", "precision", "device", "status", "mean ms", "median ms", "p90 ms", "cv",
                              "tokens/s", "TFLOP/s", "MFU", "peak mem", "final loss", "speedup", "mem ratio"},
                             rows) +
           render_quality_notes(runs) + render_comparability_notes(comparison);
}

std::string render_comparability_notes(const std::vector<ComparisonRow>& rows) {
    std::string text;
    for (const ComparisonRow& row : rows) {
        if (row.not_comparable.empty()) continue;
        text += "no speedup: " + display_name(*row.run) + ": " + not_comparable_words(row.not_comparable) + "\n";
    }
    for (const ComparisonRow& row : rows) {
        if (!row.emulated_format_memory || !row.not_comparable.empty()) continue;
        text += "no memory ratio: " + display_name(*row.run) + ": " + emulated_format_memory_reason() + "\n";
    }
    for (const ComparisonRow& row : rows) {
        if (row.per_token) {
            text += "per token: runs of another process count than the baseline's compare tokens per second\n";
            break;
        }
    }
    return text;
}

std::string render_breakdown_table(const std::vector<RunRecord>& runs) {
    std::vector<std::vector<std::string>> rows;
    for (const RunRecord& r : runs) {
        const std::optional<StepBreakdown>& b = r.summary.breakdown;
        if (!b) continue;
        const double total = b->total_ms();
        std::vector<std::string> row{display_name(r)};
        for (const StepSegment segment : kStepSegments) {
            const double ms = b->at(segment);
            row.push_back(format_fixed(ms, 2) + " (" + format_fixed(total > 0 ? 100.0 * ms / total : 0.0, 0, "%") + ")");
        }
        row.push_back(r.summary.breakdown_source);
        rows.push_back(std::move(row));
    }
    if (rows.empty()) return {};
    return "Where the step time goes (mean ms per step):\n" +
           render_text_table({"run", "forward", "backward", "communication", "optimizer", "fp8 bookkeeping", "over"}, rows);
}

std::string scaling_above_perfect_words() {
    return "above 100 %: each process stepped faster than the 1-process run did, which a busy machine or a disturbed "
           "1-process run explains, not scaling; measure again on an idle machine before quoting it";
}

bool scaling_is_noisy(const RunRecord& job) {
    return job.execution.dist && (is_noisy(job.execution.quality) || job.execution.dist->baseline_noisy);
}

std::string scaling_noisy_words(const RunRecord& job) {
    const bool job_noisy = is_noisy(job.execution.quality);
    const bool base_noisy = job.execution.dist && job.execution.dist->baseline_noisy;
    const std::string which = job_noisy && base_noisy ? "the job and its 1-process run were"
                              : job_noisy             ? "the job was"
                                                      : "its 1-process run was";
    return "noisy: " + which + " measured on a disturbed machine or with unsteady step times, so this efficiency is not a "
           "result to quote; measure again on an idle machine";
}

std::string render_quality_notes(const std::vector<RunRecord>& runs) {
    std::string out;
    std::string unrecorded;
    for (const RunRecord& r : runs) {
        if (!r.execution.quality) {
            if (r.status != RunStatus::Finished) continue;
            if (!unrecorded.empty()) unrecorded += ", ";
            unrecorded += display_name(r);
            continue;
        }
        if (r.execution.quality->noisy) {
            out += printable_text("noisy: " + display_name(r) + ": " + quality_reasons_text(r.execution.quality)) + "\n";
        }
    }
    if (!unrecorded.empty()) {
        out += printable_text("measurement quality not recorded (older records, not known to be clean): " + unrecorded) + "\n";
    }
    return out;
}

std::string scaling_threads_words(const RunRecord& job) {
    const int baseline = job.execution.dist ? job.execution.dist->baseline_threads : 0;
    const int rank = job.execution.quality ? job.execution.quality->threads : 0;
    if (job.execution.device != "cpu" || baseline <= 0 || rank <= 0) return {};
    return std::to_string(baseline) + (baseline == 1 ? " CPU thread" : " CPU threads") + " in the 1-process run, " +
           std::to_string(rank) + " in each rank";
}

std::string render_job_summary(const RunRecord& run) {
    if (!run.execution.dist) return {};
    const DistExecution& d = *run.execution.dist;
    std::string out = "Data-parallel job: " + std::to_string(d.world_size) + (d.world_size == 1 ? " process" : " processes") +
                      " over " + printable_text(d.backend) + ", " + std::to_string(d.buckets) + " gradient bucket" + (d.buckets == 1 ? "" : "s") +
                      " of up to " + format_fixed(d.bucket_mb, 1) + " MB (" + std::to_string(d.buckets_started_during_backward) +
                      " started during the backward), " + format_bytes(d.allreduce_bytes) + " all-reduced per step" +
                      (d.amax_reduction ? ", FP8 amaxes reduced over ranks" : "") + "\n";
    out += "  mean ms per timed step by rank:";
    for (std::size_t r = 0; r < d.rank_mean_ms.size(); ++r) out += (r ? ", " : " ") + format_fixed(d.rank_mean_ms[r], 2);
    out += "\n";
    if (run.summary.tokens_per_s) out += "  tokens/s for the whole job: " + format_fixed(run.summary.tokens_per_s, 0) + "\n";
    if (d.scaling_efficiency) {
        const std::string threads = scaling_threads_words(run);
        out += "  scaling efficiency: " + format_fixed(*d.scaling_efficiency * 100.0, 1, "%") +
               " (the 1-process run's median ms per step over the job's, same batch per process" +
               (threads.empty() ? std::string() : "; " + threads) + ")\n";
        if (*d.scaling_efficiency > 1.0) out += "  " + scaling_above_perfect_words() + "\n";
        if (scaling_is_noisy(run)) out += "  " + scaling_noisy_words(run) + "\n";
    } else {
        out += "  scaling efficiency: not measured (no 1-process run of the same per-process batch)\n";
    }
    return out;
}

}  // namespace tewb

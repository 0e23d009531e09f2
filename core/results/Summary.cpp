#include "core/results/Summary.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tewb {

double percentile(std::vector<double> values, double p) {
    if (values.empty()) {
        return 0.0;
    }
    std::sort(values.begin(), values.end());
    const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(values.size() - 1);
    const auto lower = static_cast<std::size_t>(std::floor(rank));
    const std::size_t upper = std::min(lower + 1, values.size() - 1);
    const double fraction = rank - static_cast<double>(lower);
    return values[lower] + (values[upper] - values[lower]) * fraction;
}

namespace {

// The mean breakdown over the timed steps that have one; failing that (a CUDA-graph run) over the eager
// warm-up steps after the first, which pays one-time costs (allocations, cuBLASLt's algorithm choice).
void summarize_breakdown(const std::vector<StepMetrics>& steps, RunSummary& summary) {
    const auto mean_over = [&](Phase phase, int skip) -> std::optional<StepBreakdown> {
        StepBreakdown sum;
        int count = 0;
        int seen = 0;
        for (const StepMetrics& step : steps) {
            if (step.phase != phase || !step.breakdown || seen++ < skip) continue;
            for (const StepSegment segment : kStepSegments) sum.at(segment) += step.breakdown->at(segment);
            ++count;
        }
        if (count == 0) return std::nullopt;
        for (const StepSegment segment : kStepSegments) sum.at(segment) /= count;
        return sum;
    };
    if ((summary.breakdown = mean_over(Phase::Timed, 0))) {
        summary.breakdown_source = "timed steps";
    } else if ((summary.breakdown = mean_over(Phase::Warmup, 1)) || (summary.breakdown = mean_over(Phase::Warmup, 0))) {
        summary.breakdown_source = "eager warm-up steps (the CUDA-graph replays are not split)";
    }
}

}  // namespace

RunSummary summarize(const std::vector<StepMetrics>& steps, const RunConfig& config, const Execution& execution) {
    RunSummary summary;
    std::vector<double> timed_ms;
    for (const StepMetrics& step : steps) {
        summary.peak_mem_bytes = std::max(summary.peak_mem_bytes, step.mem_bytes);
        if (step.phase == Phase::Timed) {
            timed_ms.push_back(step.step_ms);
        }
    }
    if (!steps.empty()) {
        summary.final_loss = steps.back().loss;
    }
    for (auto step = steps.rbegin(); step != steps.rend(); ++step) {
        if (step->val_loss) {
            summary.final_val_loss = step->val_loss;
            summary.final_val_step = step->step;
            break;
        }
    }
    summary.timed_steps = static_cast<int>(timed_ms.size());
    summarize_breakdown(steps, summary);
    if (timed_ms.empty()) {
        return summary;
    }
    const double mean = std::accumulate(timed_ms.begin(), timed_ms.end(), 0.0) / static_cast<double>(timed_ms.size());
    summary.mean_ms = mean;
    summary.median_ms = percentile(timed_ms, 50.0);
    summary.p90_ms = percentile(timed_ms, 90.0);
    if (mean > 0.0) {
        summary.tokens_per_s = static_cast<double>(config.tokens_per_step()) / (mean / 1000.0);
        summary.tflops = execution.flops_per_step / (mean / 1000.0) / 1e12;
        if (execution.peak_tflops && *execution.peak_tflops > 0.0) {
            summary.mfu = *summary.tflops / *execution.peak_tflops;
        }
    }
    return summary;
}

}  // namespace tewb

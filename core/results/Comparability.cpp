#include "core/results/Comparability.h"

#include "core/results/RunWords.h"

#include <string_view>

namespace tewb {

namespace {

std::string device_kind(const RunRecord& r) {
    const std::string& device = r.execution.device;
    return device.substr(0, device.find(':'));
}

std::string data_kind(const RunRecord& r) {
    return r.config.data.from_file() ? "a token file" : "synthetic tokens";
}

void differ(std::vector<std::string>& out, std::string_view what, const std::string& run, const std::string& base) {
    if (run != base) out.push_back(std::string(what) + " " + run + " vs " + base);
}

void differ(std::vector<std::string>& out, std::string_view what, long long run, long long base) {
    differ(out, what, std::to_string(run), std::to_string(base));
}

// "was cancelled", "failed"; nothing for a finished run or one still running (its figures so far are live ones).
std::optional<std::string> unfinished_words(RunStatus status) {
    switch (status) {
        case RunStatus::Cancelled: return std::string("was cancelled");
        case RunStatus::Failed: return std::string("failed");
        case RunStatus::Finished:
        case RunStatus::Running: break;
    }
    return std::nullopt;
}

}  // namespace

Comparability comparability(const RunRecord& run, const RunRecord& baseline) {
    Comparability c;
    const ModelShape& m = run.config.model;
    const ModelShape& b = baseline.config.model;
    differ(c.differences, "model", std::string(to_string(m.arch)), std::string(to_string(b.arch)));
    differ(c.differences, "layers", m.layers, b.layers);
    differ(c.differences, "hidden", m.hidden, b.hidden);
    differ(c.differences, "heads", m.heads, b.heads);
    differ(c.differences, "key/value heads", effective_kv_heads(m), effective_kv_heads(b));
    if (m.arch == Arch::Llama && b.arch == Arch::Llama) differ(c.differences, "ffn", m.ffn, b.ffn);
    differ(c.differences, "vocabulary", m.vocab, b.vocab);
    differ(c.differences, "sequence", m.seq, b.seq);
    differ(c.differences, "batch", run.config.batch, baseline.config.batch);
    differ(c.differences, "data", data_kind(run), data_kind(baseline));
    differ(c.differences, "device", device_kind(run), device_kind(baseline));
    // --inspect-fp8 reads every cast's saturation and underflow back to the host inside forward and backward: its
    // cost is in the step time (on a CPU it was more than half of it), so an inspected run's time is not a speed.
    if (run.config.inspect_fp8 != baseline.config.inspect_fp8) {
        differ(c.differences, "FP8 inspection", run.config.inspect_fp8 ? "on" : "off", baseline.config.inspect_fp8 ? "on" : "off");
    }
    const int processes = run.config.dist.world_size();
    const int base_processes = baseline.config.dist.world_size();
    if (c.differences.empty() && processes != base_processes) {
        c.token_ratio = static_cast<double>(processes) / static_cast<double>(base_processes);
    }
    return c;
}

std::optional<std::string> no_speedup_reason(const RunRecord& run) {
    const auto words = unfinished_words(run.status);
    return words ? std::optional<std::string>("it " + *words) : std::nullopt;
}

std::optional<std::string> baseline_refusal(const RunRecord& baseline) {
    if (baseline.execution.fp8_emulated) {
        return emulated_baseline_refusal();
    }
    const auto words = unfinished_words(baseline.status);
    return words ? std::optional<std::string>("the baseline " + *words) : std::nullopt;
}

std::vector<std::string> speedup_obstacles(const RunRecord& run, const RunRecord& baseline) {
    if (&run == &baseline) return {};
    std::vector<std::string> out;
    if (const auto refused = baseline_refusal(baseline)) out.push_back(*refused);
    if (const auto reason = no_speedup_reason(run)) out.push_back(*reason);
    for (std::string& d : comparability(run, baseline).differences) out.push_back(std::move(d));
    return out;
}

std::string not_comparable_words(const std::vector<std::string>& obstacles) {
    std::string text = kNotComparable;
    for (std::size_t i = 0; i < obstacles.size(); ++i) text += (i == 0 ? ": " : "; ") + obstacles[i];
    return text;
}

}  // namespace tewb

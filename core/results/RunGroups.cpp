#include "core/results/RunGroups.h"

#include <algorithm>
#include <map>

#include "core/common/TextTable.h"
#include "core/results/Comparability.h"

namespace tewb {

namespace {

std::vector<double> timed_step_ms(const RunRecord& r) {
    std::vector<double> out;
    for (const StepMetrics& s : r.steps) {
        if (s.phase == Phase::Timed) out.push_back(s.step_ms);
    }
    return out;
}

Statistic statistic_for(const RunGroup& g) {
    return g.repeated ? Statistic::Median : Statistic::Mean;
}

}  // namespace

std::string RunGroup::sample_basis() const {
    const std::string finished = std::to_string(counted.size()) + " of " + std::to_string(planned) + " repeats";
    const bool short_of_plan = !group_id.empty() && static_cast<int>(counted.size()) < planned;
    if (repeated) return short_of_plan ? finished : std::to_string(counted.size()) + " repeats";
    if (counted.empty()) return finished + " finished";
    const std::string steps = std::to_string(sample_ms.size()) + " timed steps";
    return short_of_plan ? steps + " (" + finished + " finished)" : steps;
}

std::vector<RunGroup> group_runs(const std::vector<RunRecord>& runs, std::optional<std::size_t> baseline,
                                 const BootstrapOptions& options) {
    std::vector<RunGroup> groups;
    std::map<std::string, std::size_t> by_id;
    std::optional<std::size_t> baseline_group;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const RunRecord& r = runs[i];
        std::size_t g = groups.size();
        if (r.repeat && !r.repeat->group.empty()) {
            const auto [it, inserted] = by_id.emplace(r.repeat->group, groups.size());
            g = it->second;
            if (inserted) {
                RunGroup fresh;
                fresh.name = display_name(r);
                fresh.group_id = r.repeat->group;
                groups.push_back(std::move(fresh));
            }
        } else {
            RunGroup single;
            single.name = display_name(r);
            groups.push_back(std::move(single));
        }
        groups[g].members.push_back(i);
        if (r.repeat && !r.repeat->group.empty()) groups[g].planned = std::max(groups[g].planned, r.repeat->count);
        if (!r.repeat || r.repeat->group.empty() || r.status == RunStatus::Finished) groups[g].counted.push_back(i);
        if (baseline == i) baseline_group = g;
    }
    for (RunGroup& g : groups) {
        g.repeated = g.counted.size() >= 2;
        std::vector<double> losses;
        std::vector<double> memories;
        for (const std::size_t i : g.counted) {
            const RunSummary& s = runs[i].summary;
            if (g.repeated) {
                if (s.mean_ms) g.sample_ms.push_back(*s.mean_ms);
            } else {
                g.sample_ms = timed_step_ms(runs[i]);
                if (g.sample_ms.empty() && s.mean_ms) g.sample_ms.push_back(*s.mean_ms);  // a record without steps
            }
            if (runs[i].execution.fp8_emulated) g.emulated = true;
            if (is_noisy(runs[i].execution.quality)) g.noisy = true;
            if (s.final_loss) losses.push_back(*s.final_loss);
            if (s.peak_mem_bytes > 0) memories.push_back(static_cast<double>(s.peak_mem_bytes));
        }
        if (!g.sample_ms.empty()) {
            g.centre_ms = g.repeated ? median_of(g.sample_ms)
                                     : (runs[g.counted.front()].summary.mean_ms ? *runs[g.counted.front()].summary.mean_ms
                                                                                : mean_of(g.sample_ms));
            g.min_ms = *std::min_element(g.sample_ms.begin(), g.sample_ms.end());
            g.max_ms = *std::max_element(g.sample_ms.begin(), g.sample_ms.end());
            if (g.sample_ms.size() >= 2) g.centre_ci = bootstrap_interval(g.sample_ms, statistic_for(g), options);
        }
        if (!losses.empty()) g.final_loss = median_of(losses);
        if (!memories.empty()) g.peak_mem_bytes = static_cast<std::uint64_t>(median_of(memories));
    }
    if (baseline_group) {
        const RunGroup& base = groups[*baseline_group];
        groups[*baseline_group].is_baseline = true;
        const RunRecord& base_run = runs[base.counted.empty() ? base.members.front() : base.counted.front()];
        for (std::size_t k = 0; k < groups.size(); ++k) {
            RunGroup& g = groups[k];
            double tokens = 1.0;
            if (k != *baseline_group) {
                const RunRecord& run = runs[g.counted.empty() ? g.members.front() : g.counted.front()];
                g.not_comparable = speedup_obstacles(run, base_run);
                if (!g.not_comparable.empty()) continue;
                tokens = comparability(run, base_run).token_ratio;
                g.per_token = tokens != 1.0;
            }
            g.speedup_noisy = k != *baseline_group && (g.noisy || base.noisy);
            if (base.centre_ms && g.centre_ms && *g.centre_ms > 0) g.speedup = *base.centre_ms / *g.centre_ms * tokens;
            if (base.peak_mem_bytes > 0 && g.peak_mem_bytes > 0) {
                g.memory_ratio = static_cast<double>(g.peak_mem_bytes) / static_cast<double>(base.peak_mem_bytes);
            }
            if (k == *baseline_group || base.sample_ms.size() < 2 || g.sample_ms.size() < 2) continue;
            // Both sides are resampled with their own statistic's meaning: repeats by median, steps by mean.
            if (base.repeated == g.repeated) {
                g.speedup_ci = bootstrap_ratio_interval(base.sample_ms, g.sample_ms, statistic_for(g), options);
                if (g.speedup_ci) g.speedup_ci = Interval{g.speedup_ci->lo * tokens, g.speedup_ci->hi * tokens};
            }
        }
    }
    return groups;
}

std::string speedup_text(const RunGroup& g) {
    if (!g.not_comparable.empty()) return kNotComparable;
    if (!g.speedup) return "-";
    if (g.emulated) return std::string(kEmulatedSpeedup);
    std::string text = format_fixed(g.speedup, 2, "x");
    if (g.speedup_ci) {
        text += " [" + format_fixed(g.speedup_ci->lo, 2) + "-" + format_fixed(g.speedup_ci->hi, 2) + "]";
        if (!g.significant()) text += " not significant";
    }
    if (g.per_token) text += " per token";
    if (g.speedup_noisy) text += g.speedup_ci && !g.significant() ? ", noisy" : " noisy";
    return text;
}

std::string render_group_table(const std::vector<RunRecord>& runs, const std::vector<RunGroup>& groups) {
    std::vector<std::vector<std::string>> rows;
    for (const RunGroup& g : groups) {
        bool unmeasured = false;
        for (const std::size_t i : g.counted) unmeasured = unmeasured || !runs[i].execution.quality;
        const std::string quality = g.noisy ? "noisy" : unmeasured ? "not measured" : "ok";
        std::string name = g.name;
        if (g.is_baseline && name.find("baseline") == std::string::npos) name += " (baseline)";
        rows.push_back({name, g.sample_basis(), format_fixed(g.centre_ms, 2),
                        g.min_ms ? format_fixed(g.min_ms, 2) + "-" + format_fixed(g.max_ms, 2) : "-",
                        g.centre_ci ? format_fixed(g.centre_ci->lo, 2) + "-" + format_fixed(g.centre_ci->hi, 2) : "-",
                        g.is_baseline ? "baseline" : speedup_text(g), format_fixed(g.memory_ratio, 2, "x"),
                        format_fixed(g.final_loss, 4), quality});
    }
    std::string text = render_text_table({"run", "over", "ms/step", "min-max ms", "95% interval ms", "speedup [95% interval]",
                                          "mem ratio", "final loss", "quality"},
                                         rows);
    for (const RunGroup& g : groups) {
        if (g.group_id.empty() || static_cast<int>(g.counted.size()) >= g.planned) continue;
        std::map<std::string, int> others;  // what the repeats that are not counted were
        for (const std::size_t i : g.members) {
            if (runs[i].status != RunStatus::Finished) ++others[std::string(to_string(runs[i].status))];
        }
        const int begun = static_cast<int>(g.members.size());
        std::string line = g.counted.empty() ? g.name + ": none of its " + std::to_string(g.planned) +
                                                   " repeats finished, so it has no figures"
                                             : g.name + ": " + std::to_string(g.counted.size()) + " of " +
                                                   std::to_string(g.planned) + " repeats finished, and only those are counted";
        for (const auto& [status, count] : others) line += "; " + std::to_string(count) + " " + status;
        if (begun < g.planned) line += "; " + std::to_string(g.planned - begun) + " not started";
        text += line + ".\n";
    }
    bool per_token = false;
    for (const RunGroup& g : groups) {
        per_token = per_token || g.per_token;
        if (!g.not_comparable.empty()) text += "no speedup: " + g.name + ": " + not_comparable_words(g.not_comparable) + "\n";
    }
    if (per_token) text += "per token: runs of another process count than the baseline's compare tokens per second\n";
    return text;
}

std::vector<std::pair<std::size_t, int>> alternating_order(std::size_t configs, int repeats) {
    std::vector<std::pair<std::size_t, int>> order;
    for (int r = 1; r <= repeats; ++r) {
        for (std::size_t c = 0; c < configs; ++c) order.emplace_back(c, r);
    }
    return order;
}

}  // namespace tewb

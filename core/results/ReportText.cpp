#include "core/results/ReportText.h"

#include <cmath>
#include <sstream>

#include "core/common/NumberText.h"
#include "core/common/TextCheck.h"
#include "core/common/TextTable.h"
#include "core/config/RunSettings.h"
#include "core/fp8/Fp8Format.h"
#include "core/results/LedgerReport.h"
#include "core/results/RunWords.h"

namespace tewb {

namespace {

bool seed_shape(const RunConfig& c) {
    const RunConfig seed = make_preset(Preset::Seed);
    return c.model == seed.model && c.batch == seed.batch;
}

std::string shape_words(const RunConfig& c) {
    if (seed_shape(c)) return "at the seed shape";
    return "at " + std::to_string(c.model.layers) + " layers, hidden " + std::to_string(c.model.hidden) + ", batch " +
           std::to_string(c.batch) + ", seq " + std::to_string(c.model.seq);
}

std::string device_words(const RunRecord& r) {
    const DeviceInfo& d = r.environment.device;
    if (r.execution.device.rfind("cuda", 0) == 0 && d.has_gpu()) return "on " + d.gpu_name;
    return "on the CPU" + (d.cpu_model.empty() ? std::string() : " (" + d.cpu_model + ")");
}

// A loss difference in words, rounded up to the next 0.01 so "within" is never an understatement.
std::string loss_words(double candidate, double baseline) {
    const double diff = candidate - baseline;
    const double bound = std::ceil(std::abs(diff) * 100.0 - 1e-9) / 100.0;
    if (bound <= 0.01) return "final loss within 0.01";
    return "final loss " + format_fixed(std::abs(diff), 3) + (diff > 0 ? " higher" : " lower");
}

std::string calls_words(std::int64_t calls) {
    return std::to_string(calls) + (calls == 1 ? " call" : " calls");
}

std::string fallback_count_words(const Execution& e) {
    const std::size_t n = e.fallbacks.size();
    return std::to_string(n) + (n == 1 ? " fallback" : " fallbacks") + " to the reference";
}

}  // namespace

std::string te_path_words(const RunRecord& r) {
    if (r.config.backend != Backend::Te) return {};
    const Execution& e = r.execution;
    if (e.te_impl.empty()) return "te path: not recorded";
    const bool emulated = e.fp8_emulated || (e.te_impl == "fused-host" && r.config.precision == Precision::Fp8);
    return "te path: " + e.te_impl + std::string(te_path_emulated_clause(emulated));
}

std::string fallback_summary(const Execution& e) {
    if (e.fallbacks.empty()) return "no fallbacks";
    std::int64_t calls = 0;
    for (const Fallback& f : e.fallbacks) calls += f.count;
    return fallback_count_words(e) + " (" + calls_words(calls) + ")";
}

std::vector<std::string> fallback_lines(const Execution& e) {
    std::vector<std::string> lines;
    for (const Fallback& f : e.fallbacks) lines.push_back(f.op + ": " + f.reason + " (" + calls_words(f.count) + ")");
    return lines;
}

bool fully_fused(const Execution& e) {
    return e.te_impl.rfind("fused", 0) == 0 && e.fallbacks.empty();
}

std::string te_path_text(const RunRecord& r, bool named) {
    const std::string path = te_path_words(r);
    if (path.empty()) return {};
    // Every line through printable_text: an imported record's text reaches a terminal.
    std::string first = (named ? display_name(r) + ": " : std::string()) + path;
    if (!r.execution.te_impl.empty()) {
        first += fully_fused(r.execution) ? ", fully fused, no fallbacks" : "; " + fallback_summary(r.execution);
    }
    std::string out = printable_text(first) + "\n";
    for (const std::string& line : fallback_lines(r.execution)) out += "  fallback: " + printable_text(line) + "\n";
    return out;
}

std::string ledger_totals_text(const RunRecord& r, bool named) {
    if (!r.execution.ledger) return {};
    std::string out;
    for (const std::string& line : ledger_totals_lines(*r.execution.ledger)) {
        out += printable_text((named ? display_name(r) + ": " : std::string()) + "ledger " + line) + "\n";
    }
    return out;
}

std::vector<std::string> command_arguments_for(const RunConfig& c) {
    std::vector<std::string> a = {"run"};
    for (const RunSetting& s : run_settings()) {
        if (!setting_in_command_line(s, c)) continue;
        a.emplace_back(s.flag);
        if (s.kind != SettingKind::Presence) a.push_back(setting_text(s, c));
    }
    return a;
}

std::string command_line_for(const RunConfig& c) {
    std::string out = "te-bench";
    for (const std::string& word : command_arguments_for(c)) {
        const bool plain = !word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.+:/=,") ==
                                               std::string::npos;
        if (plain) {
            out += " " + word;
            continue;
        }
        std::string quoted = "'";
        for (const char ch : word) quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
        out += " " + quoted + "'";
    }
    return out;
}

std::vector<std::string> honesty_labels(const RunRecord& r) {
    std::vector<std::string> labels;
    if (r.execution.device.rfind("cuda", 0) != 0) labels.push_back("CPU");
    if (r.execution.fp8_emulated) labels.emplace_back(kEmulatedFp8Label);
    const RunConfig seed = make_preset(Preset::Seed);
    if (r.config.iters < seed.iters) {
        labels.push_back("fewer timed steps than the seed (" + std::to_string(r.config.iters) + ", seed " +
                         std::to_string(seed.iters) + ")");
    }
    if (r.config.warmup < seed.warmup) {
        labels.push_back("shorter warm-up than the seed (" + std::to_string(r.config.warmup) + " steps, seed " +
                         std::to_string(seed.warmup) + ")");
    }
    if (!seed_shape(r.config)) labels.push_back("not the seed shape");
    if (!r.execution.fallbacks.empty()) labels.push_back(fallback_count_words(r.execution));
    if (is_noisy(r.execution.quality)) labels.push_back("noisy: " + quality_reasons_text(r.execution.quality));
    if (!r.execution.quality && r.status == RunStatus::Finished) labels.push_back("measurement quality not recorded");
    if (r.status != RunStatus::Finished) labels.push_back(std::string(to_string(r.status)));
    return labels;
}

std::string report_headline(const std::vector<RunRecord>& runs, const std::vector<RunGroup>& groups) {
    const RunGroup* base = nullptr;
    const RunGroup* best = nullptr;
    const RunGroup* emulated = nullptr;  // an emulated run's ratio is never a speedup to state
    for (const RunGroup& g : groups) {
        if (g.is_baseline) {
            base = &g;
        } else if (g.speedup && g.emulated) {
            if (emulated == nullptr) emulated = &g;
        } else if (g.speedup && (best == nullptr || *g.speedup > *best->speedup)) {
            best = &g;
        }
    }
    if (runs.empty()) return "No runs.";
    if (base == nullptr) return "No baseline chosen, so no speedup to state.";
    const RunRecord& b = runs[base->members.front()];
    if (best == nullptr && emulated != nullptr) {
        const RunRecord& e = runs[emulated->members.front()];
        std::string text =
            display_name(b) + " ran " + shape_words(b.config) + " " + device_words(b) + "; " + emulated_headline(display_name(e));
        if (emulated->final_loss && base->final_loss) text += " (" + loss_words(*emulated->final_loss, *base->final_loss) + ")";
        return text + ".";
    }
    if (best == nullptr) {
        return display_name(b) + " ran " + shape_words(b.config) + " " + device_words(b) + "; nothing to compare it with.";
    }
    const RunRecord& r = runs[best->members.front()];
    std::string baseline_name = b.config.name;
    const std::string suffix = " (baseline)";
    if (baseline_name.size() > suffix.size() && baseline_name.compare(baseline_name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        baseline_name.resize(baseline_name.size() - suffix.size());
    }
    std::string text = display_name(r);
    if (*best->speedup >= 1.0) {
        text += " is " + format_fixed(best->speedup, 2, "x") + " faster than the " + baseline_name + " baseline";
    } else {
        text = "Nothing beat the " + baseline_name + " baseline: the fastest other run, " + display_name(r) + ", runs at " +
               format_fixed(best->speedup, 2, "x") + " its speed";
    }
    for (const std::string& part : {shape_words(r.config), device_words(r)}) {
        text += ' ';  // appended one by one: GCC 12 warns falsely (-Wrestrict) on " " + shape_words(...) here
        text += part;
    }
    if (best->final_loss && base->final_loss) text += ", " + loss_words(*best->final_loss, *base->final_loss);
    if (best->speedup_ci && !best->significant()) {
        text += " (not significant: the 95% interval " + format_fixed(best->speedup_ci->lo, 2) + "-" +
                format_fixed(best->speedup_ci->hi, 2) + " contains 1.0)";
    }
    if (best->speedup_noisy) text += " (noisy measurement: not clean evidence of a difference)";
    return text + ".";
}

std::string quality_sentence(const std::vector<RunRecord>& runs) {
    std::string noisy;
    std::string unrecorded;
    std::size_t measured = 0;
    for (const RunRecord& r : runs) {
        if (r.execution.quality) ++measured;
        if (is_noisy(r.execution.quality)) {
            if (!noisy.empty()) noisy += "; ";
            noisy += display_name(r) + " (" + quality_reasons_text(r.execution.quality) + ")";
        } else if (!r.execution.quality && r.status == RunStatus::Finished) {
            if (!unrecorded.empty()) unrecorded += ", ";
            unrecorded += display_name(r);
        }
    }
    std::string text;
    if (!noisy.empty()) {
        text = "Noisy measurements: " + noisy + "; their times and speedups are not clean evidence, measure them again on an "
               "idle machine.";
    } else if (measured > 0) {
        text = std::string(measured == runs.size() ? "Every run was" : "The runs with a recorded quality were") +
               " measured with steady step times (CV at most " + format_fixed(kNoisyCv * 100.0, 0, " %") +
               ") on an undisturbed machine.";
    }
    if (!unrecorded.empty()) {
        if (!text.empty()) text += ' ';
        text += "Measurement quality was not recorded for " + unrecorded + " (older records), so they are not known to be clean.";
    }
    return printable_text(text);
}

}  // namespace tewb

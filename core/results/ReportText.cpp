#include "core/results/ReportText.h"

#include <cmath>
#include <sstream>

#include "core/common/NumberText.h"
#include "core/common/TextTable.h"
#include "core/fp8/Fp8Format.h"

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

}  // namespace

std::vector<std::string> command_arguments_for(const RunConfig& c) {
    std::vector<std::string> a = {"run",       "--device", std::string(to_string(c.device)),  "--backend",
                                  std::string(to_string(c.backend)), "--precision", std::string(to_string(c.precision))};
    const auto add = [&](const char* flag, const std::string& value) {
        a.push_back(flag);
        a.push_back(value);
    };
    add("--layers", std::to_string(c.model.layers));
    add("--hidden", std::to_string(c.model.hidden));
    add("--heads", std::to_string(c.model.heads));
    add("--seq", std::to_string(c.model.seq));
    add("--vocab", std::to_string(c.model.vocab));
    add("--batch", std::to_string(c.batch));
    add("--warmup", std::to_string(c.warmup));
    add("--iters", std::to_string(c.iters));
    add("--lr", shortest_text(c.lr));
    add("--seed", std::to_string(c.seed));
    add("--cuda-graph", c.cuda_graph ? "on" : "off");
    if (c.precision == Precision::Fp8) {
        add("--recipe", std::string(to_string(c.fp8.scaling)));
        add("--fp8-format", std::string(to_string(c.fp8.format)));
        add("--amax-history-len", std::to_string(c.fp8.amax_history_len));
        add("--amax-algo", std::string(to_string(c.fp8.algo)));
        add("--margin", std::to_string(c.fp8.margin));
        if (c.fp8.scaling == ScalingKind::Block) add("--block-scales", c.fp8.block_power_of_two ? "pow2" : "exact");
        if (c.fp8.scaling == ScalingKind::Delayed) add("--calibrate-first-step", c.fp8.calibrate_first_step ? "on" : "off");
        if (c.inspect_fp8) a.push_back("--inspect-fp8");
    }
    if (c.dist.enabled()) {
        add("--nproc", std::to_string(c.dist.nproc));
        add("--dist-backend", std::string(to_string(c.dist.backend)));
        add("--bucket-mb", shortest_text(c.dist.bucket_mb));
        add("--amax-reduction", c.dist.amax_reduction ? "on" : "off");
        add("--dist-timeout", std::to_string(c.dist.timeout_s));
    }
    if (!c.name.empty()) add("--name", c.name);
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
    if (r.execution.fp8_emulated) labels.push_back("emulated FP8");
    const RunConfig seed = make_preset(Preset::Seed);
    if (r.config.warmup < seed.warmup || r.config.iters < seed.iters) {
        labels.push_back("fewer steps than the seed (" + std::to_string(r.config.warmup) + " + " + std::to_string(r.config.iters) +
                         ", seed " + std::to_string(seed.warmup) + " + " + std::to_string(seed.iters) + ")");
    }
    if (!seed_shape(r.config)) labels.push_back("not the seed shape");
    if (r.status != RunStatus::Finished) labels.push_back(std::string(to_string(r.status)));
    return labels;
}

std::string report_headline(const std::vector<RunRecord>& runs, const std::vector<RunGroup>& groups) {
    const RunGroup* base = nullptr;
    const RunGroup* best = nullptr;
    for (const RunGroup& g : groups) {
        if (g.is_baseline) {
            base = &g;
        } else if (g.speedup && (best == nullptr || *g.speedup > *best->speedup)) {
            best = &g;
        }
    }
    if (runs.empty()) return "No runs.";
    if (base == nullptr) return "No baseline chosen, so no speedup to state.";
    const RunRecord& b = runs[base->members.front()];
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
    text += " " + shape_words(r.config) + " " + device_words(r);
    if (best->final_loss && base->final_loss) text += ", " + loss_words(*best->final_loss, *base->final_loss);
    if (best->speedup_ci && !best->significant()) {
        text += " (not significant: the 95% interval " + format_fixed(best->speedup_ci->lo, 2) + "-" +
                format_fixed(best->speedup_ci->hi, 2) + " contains 1.0)";
    }
    return text + ".";
}

}  // namespace tewb

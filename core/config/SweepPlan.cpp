#include "core/config/SweepPlan.h"

#include <set>

#include "core/common/Error.h"
#include "core/config/RunFacts.h"

namespace tewb {

namespace {

std::vector<std::string> split_commas(std::string_view text) {
    std::vector<std::string> out;
    std::string current;
    for (const char c : text) {
        if (c == ',') {
            out.push_back(current);
            current.clear();
        } else {
            current += c;
        }
    }
    out.push_back(current);
    return out;
}

}  // namespace

std::string SweepPoint::label() const {
    return "hidden " + std::to_string(hidden) + ", batch " + std::to_string(batch) + ", seq " + std::to_string(seq);
}

std::vector<int> parse_int_list(std::string_view flag, std::string_view text) {
    std::vector<int> out;
    std::set<int> seen;
    for (const std::string& item : split_commas(text)) {
        if (item.empty()) {
            throw ConfigError(std::string(flag) + " '" + std::string(text) +
                              "': an empty item; allowed: whole numbers separated by commas, e.g. 256,512,768");
        }
        const int value = parse_int(flag, item);
        if (!seen.insert(value).second) {
            throw ConfigError(std::string(flag) + " '" + std::string(text) + "': " + item + " is listed twice");
        }
        out.push_back(value);
    }
    return out;
}

std::vector<Precision> parse_precision_list(std::string_view flag, std::string_view text) {
    std::vector<Precision> out;
    for (const std::string& item : split_commas(text)) {
        const Precision p = parse_name<Precision>(flag, item);
        if (p == Precision::Auto) {
            throw ConfigError(std::string(flag) + " '" + item + "': name a precision; allowed: fp32, bf16, fp8");
        }
        for (const Precision seen : out) {
            if (seen == p) throw ConfigError(std::string(flag) + " '" + std::string(text) + "': " + item + " is listed twice");
        }
        out.push_back(p);
    }
    return out;
}

std::string sweep_run_name(const SweepPoint& point, Backend backend, Precision precision, bool baseline, bool cpu) {
    return std::string("sweep ") + (baseline ? "baseline " : "") + std::string(to_string(backend)) + " " +
           std::string(to_string(precision)) + (cpu ? " cpu" : "") + " h" + std::to_string(point.hidden) + " b" +
           std::to_string(point.batch) + " s" + std::to_string(point.seq);
}

std::vector<SweepRun> plan_sweep(const SweepSpec& spec, const DeviceInfo& device) {
    const std::vector<int> hidden = spec.hidden.empty() ? std::vector<int>{spec.base.model.hidden} : spec.hidden;
    const std::vector<int> batch = spec.batch.empty() ? std::vector<int>{spec.base.batch} : spec.batch;
    const std::vector<int> seq = spec.seq.empty() ? std::vector<int>{spec.base.model.seq} : spec.seq;
    if (spec.precisions.empty()) throw ConfigError("--precisions: empty; allowed: fp32, bf16, fp8, e.g. bf16,fp8");
    if (spec.repeats < 1 || spec.repeats > kMaxRepeats) {
        throw ConfigError("--repeat " + std::to_string(spec.repeats) + ": allowed: 1 to " + std::to_string(kMaxRepeats));
    }
    for (const int h : hidden) {
        if (h < kSweepHeadSize || h % kSweepHeadSize != 0) {
            throw ConfigError("--hidden " + std::to_string(h) + ": the sweep uses heads of " + std::to_string(kSweepHeadSize) +
                              " (heads = hidden / " + std::to_string(kSweepHeadSize) + "); allowed: multiples of " +
                              std::to_string(kSweepHeadSize));
        }
    }
    const std::size_t points = hidden.size() * batch.size() * seq.size();
    if (points > static_cast<std::size_t>(kSweepMaxPoints)) {
        throw ConfigError("the grid has " + std::to_string(points) + " sizes (--hidden × --batch × --seq); allowed: at most " +
                          std::to_string(kSweepMaxPoints));
    }
    for (const Precision p : spec.precisions) {
        if (p == Precision::Fp8 && spec.backend != Backend::Te) {
            throw ConfigError("--precisions fp8 needs --backend te (the torch backend has no FP8)");
        }
    }
    if (spec.backend == Backend::Torch && spec.baseline_backend == Backend::Torch && spec.base.te_impl != TeImpl::Auto) {
        throw ConfigError("--te-impl " + std::string(to_string(spec.base.te_impl)) +
                          ": applies to te runs and this sweep has none (--backend torch, --baseline torch); allowed: "
                          "auto, or --backend te");
    }
    const DeviceKind kind = run_device(spec.base.device, device);
    const bool cuda = kind == DeviceKind::Cuda;
    const Precision baseline = baseline_precision(kind);
    if (spec.backend == spec.baseline_backend && spec.precisions.size() == 1 && spec.precisions.front() == baseline) {
        const std::string backend(to_string(spec.backend));
        throw ConfigError("--precisions " + std::string(to_string(baseline)) + " with --backend " + backend +
                          " is the baseline itself on this device (--baseline " + backend + "); add another precision" +
                          (spec.backend == Backend::Te ? std::string(", e.g. fp8,") : std::string(",")) +
                          " or choose another --backend or --baseline");
    }
    std::vector<SweepRun> plan;
    for (const int h : hidden) {
        for (const int b : batch) {
            for (const int s : seq) {
                const SweepPoint point{h, b, s};
                int repeat = 1;
                const auto add = [&](Backend backend, Precision precision, bool baseline) {
                    RunConfig c = spec.base;
                    c.device = kind;
                    c.backend = backend;
                    c.precision = precision;
                    c.model.hidden = h;
                    c.model.heads = h / kSweepHeadSize;
                    c.model.seq = s;
                    c.batch = b;
                    c.inspect_fp8 = false;
                    c.te_impl = backend == Backend::Te ? spec.base.te_impl : TeImpl::Auto;
                    c.name = sweep_run_name(point, backend, precision, baseline, !cuda);
                    if (c.model.arch == Arch::Llama) c.name.insert(std::string_view("sweep ").size(), "llama ");
                    try {
                        validate(c);  // sizes out of range are the user's error: stop before anything runs
                    } catch (const ConfigError& e) {
                        // The swept size names the heads the sweep chose (hidden / 64), which --kv-heads must divide.
                        throw ConfigError("sweep size " + point.label() + " (heads " + std::to_string(c.model.heads) +
                                          "): " + e.what());
                    }
                    SweepRun run{point, c, baseline, std::nullopt, repeat, spec.repeats};
                    try {
                        run.config = resolve(c, device);
                    } catch (const ConfigError& e) {
                        run.skip_reason = e.what();
                    }
                    plan.push_back(std::move(run));
                };
                for (repeat = 1; repeat <= spec.repeats; ++repeat) {
                    add(spec.baseline_backend, baseline, true);
                    for (const Precision p : spec.precisions) {
                        if (spec.backend == spec.baseline_backend && p == baseline) continue;  // that is the baseline
                        add(spec.backend, p, false);
                    }
                }
            }
        }
    }
    return plan;
}

}  // namespace tewb

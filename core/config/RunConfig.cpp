#include "core/config/RunConfig.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>

#include "core/common/Choice.h"
#include "core/common/Error.h"
#include "core/common/TextCheck.h"
#include "core/config/Availability.h"
#include "core/common/TextTable.h"
#include "core/device/HostMemory.h"
#include "core/config/MemoryEstimate.h"
#include "core/config/RunFacts.h"
#include "core/config/RunSettings.h"

namespace tewb {

namespace {

struct Limits {
    std::int64_t min;
    std::int64_t max;
};
constexpr double kMaxLr = 10.0;
constexpr double kMaxBucketMb = 1024;

constexpr NameTable kOnOffNames{std::to_array<Named<bool>>({{"on", true}, {"off", false}})};
constexpr std::size_t kMaxNameLength = 200;

std::string format_number(double value) {
    std::ostringstream out;
    out << value;
    return out.str();
}

// A whole-number setting outside the range its row in the settings table allows.
void check_range(std::vector<ConfigProblem>& problems, std::string_view id, std::int64_t value) {
    const RunSetting& s = setting(id);
    if (value < s.valid->min || value > s.valid->max) {
        std::string message(s.flag);
        for (const std::string& part : {std::string(" "), std::to_string(value), std::string(": out of range; allowed: "),
                                        std::to_string(s.valid->min), std::string(" to "), std::to_string(s.valid->max)}) {
            message += part;  // appended: GCC 12 warns falsely (-Wrestrict) on " " + std::to_string(...) here
        }
        problems.push_back({std::string(id), std::move(message)});
    }
}

// The allowed range of a whole-number setting, by its flag, for messages about numbers too large to read.
std::optional<Limits> limits_of(std::string_view flag) {
    static const std::pair<std::string_view, Limits> kOtherFlags[] = {
        {"--history-len", {1, Fp8Recipe::kMaxHistoryLen}},  // `te-bench recipe`'s old name of --amax-history-len
        {"--nproc", {1, 64}},  // 0 is "not a job", which the flag cannot ask for
        {"--master-port", {1, 65535}},
        {"--repeat", {1, kMaxRepeats}},
        {"ID", {1, std::numeric_limits<int>::max()}},  // a run's number in the store
    };
    for (const auto& [name, limits] : kOtherFlags) {
        if (name == flag) return limits;
    }
    if (const RunSetting* s = find_setting(flag); s != nullptr && s->flag == flag && s->valid) {
        return Limits{s->valid->min, s->valid->max};
    }
    return std::nullopt;
}

std::string quoted(std::string_view text) {
    std::string out(1, '\'');  // appended, not "'" + text: GCC 12 warns falsely (-Wrestrict) on that form here
    out += text;
    out += '\'';
    return out;
}

}  // namespace

std::optional<std::string> name_problem(std::string_view name) {
    const std::string allowed = "; allowed: printable UTF-8 text of at most " + std::to_string(kMaxNameLength) +
                                " characters, without bidirectional controls (" + std::string(kBidiControls) + ")";
    if (const auto problem = text_problem(name, kMaxNameLength)) {
        return *problem + allowed;
    }
    if (const auto control = bidi_control_at(name)) {
        return "contains a bidirectional control character (" + *control + ")" + allowed;
    }
    return std::nullopt;
}

std::vector<ConfigProblem> find_problems(const RunConfig& c) {
    std::vector<ConfigProblem> problems;
    check_range(problems, "layers", c.model.layers);
    check_range(problems, "hidden", c.model.hidden);
    check_range(problems, "heads", c.model.heads);
    check_range(problems, "seq", c.model.seq);
    check_range(problems, "vocab", c.model.vocab);
    check_range(problems, "batch", c.batch);
    check_range(problems, "warmup", c.warmup);
    check_range(problems, "iters", c.iters);
    if (c.model.hidden > 0 && c.model.heads > 0 && c.model.hidden % c.model.heads != 0) {
        problems.push_back({"hidden", "--hidden " + std::to_string(c.model.hidden) + ": not divisible by --heads " +
                                          std::to_string(c.model.heads) + "; allowed: a multiple of the head count"});
    }
    if (!std::isfinite(c.lr)) {
        problems.push_back({"lr", "--lr " + format_number(c.lr) +
                                      ": not a finite number; allowed: greater than 0 and at most " + format_number(kMaxLr)});
    } else if (c.lr <= 0.0 || c.lr > kMaxLr) {
        problems.push_back({"lr", "--lr " + format_number(c.lr) + ": out of range; allowed: greater than 0 and at most " +
                                      format_number(kMaxLr)});
    }
    if (c.seed > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        problems.push_back({"seed", "--seed " + std::to_string(c.seed) + ": out of range; allowed: 0 to " +
                                        std::to_string(std::numeric_limits<std::int64_t>::max())});
    }
    if (const auto problem = name_problem(c.name)) {
        problems.push_back({"name", "--name: " + *problem});
    }
    if (c.inspect_fp8 && c.precision != Precision::Fp8) {
        problems.push_back({"inspect-fp8", "--inspect-fp8: counts FP8 saturation and underflow, so it needs --precision fp8 "
                                           "(with --backend te)"});
    }
    for (ConfigProblem& problem : find_recipe_problems(c.fp8)) {
        problems.push_back(std::move(problem));
    }
    if (c.te_impl != TeImpl::Auto && c.backend == Backend::Torch) {
        problems.push_back({"te-impl", "--te-impl " + std::string(to_string(c.te_impl)) +
                                           ": chooses the code of the te backend's modules and the torch backend has none; "
                                           "allowed with torch: auto (or --backend te)"});
    }
    if (c.precision == Precision::Fp8 && c.backend == Backend::Torch) {
        problems.push_back({"precision",
                            "--precision fp8: the torch backend has no FP8 path; allowed with torch: fp32|bf16 "
                            "(FP8 needs --backend te)"});
    }
    check_range(problems, "nproc", c.dist.nproc);
    check_range(problems, "dist-timeout", c.dist.timeout_s);
    if (!std::isfinite(c.dist.bucket_mb) || c.dist.bucket_mb <= 0.0 || c.dist.bucket_mb > kMaxBucketMb) {
        problems.push_back({"bucket-mb", "--bucket-mb " + format_number(c.dist.bucket_mb) +
                                             ": out of range; allowed: greater than 0 and at most " + format_number(kMaxBucketMb)});
    }
    if (c.dist.nproc > 0 && c.dist.backend == DistBackend::Nccl && c.device == DeviceKind::Cpu) {
        problems.push_back({"dist-backend", "--dist-backend nccl: NCCL runs on GPUs; allowed with --device cpu: gloo|auto"});
    }
    return problems;
}

void validate(const RunConfig& config) {
    const std::vector<ConfigProblem> problems = find_problems(config);
    if (!problems.empty()) {
        throw ConfigError(problems.front().message);
    }
}

std::optional<std::string> memory_problem(const RunConfig& resolved, const DeviceInfo& device,
                                          std::optional<std::uint64_t> host_available, MemoryScope scope) {
    const bool cuda = resolved.device == DeviceKind::Cuda;
    const std::optional<std::uint64_t> available =
        !cuda ? host_available
              : device.memory_total_bytes > 0 ? std::optional<std::uint64_t>(device.memory_free_bytes) : std::nullopt;
    if (!available) return std::nullopt;  // nothing to compare with: the run's own out-of-memory handling decides
    const MemoryEstimate one = estimate_training_memory(resolved);
    const int processes = !cuda && scope == MemoryScope::WholeJob && resolved.dist.enabled() ? resolved.dist.nproc : 1;
    const double total = static_cast<double>(one.total_bytes()) * processes;
    if (total <= static_cast<double>(*available)) return std::nullopt;
    const auto shape = resolved.model;
    std::string need = "about " + format_bytes(one.total_bytes()) + " (";
    if (one.runtime_bytes > 0) need += format_bytes(one.runtime_bytes) + " for LibTorch itself, ";
    need += format_bytes(one.state_bytes) + " for " + std::to_string(one.parameters) +
            " parameters with their gradients and AdamW state, " + format_bytes(one.activation_bytes) + " of activations)";
    if (processes > 1) {
        need = "about " + format_bytes(static_cast<std::uint64_t>(total)) + " for its " + std::to_string(processes) +
               " processes, each " + need;
    }
    return "--layers " + std::to_string(shape.layers) + " --hidden " + std::to_string(shape.hidden) + " --seq " +
           std::to_string(shape.seq) + " --vocab " + std::to_string(shape.vocab) + " --batch " +
           std::to_string(resolved.batch) + (processes > 1 ? " --nproc " + std::to_string(processes) : std::string()) +
           ": this run needs " + need + ", more than the " + format_bytes(*available) +
           (cuda ? " free on the GPU" : " of host memory available") + "; allowed: a smaller model, --batch or --seq" +
           (processes > 1 ? ", or fewer processes" : "");
}

RunConfig resolve(const RunConfig& config, const DeviceInfo& device, MemoryScope scope) {
    validate(config);
    RunConfig resolved = config;
    if (const Availability d = device_availability(resolved.device, device); !d.available) {
        throw ConfigError(d.reason);
    }
    resolved.device = run_device(resolved.device, device);
    if (resolved.precision == Precision::Auto) resolved.precision = baseline_precision(resolved.device);
    if (const Availability p = precision_availability(resolved.precision, resolved.backend, resolved.device, device);
        !p.available) {
        throw ConfigError(p.reason);
    }
    if (resolved.backend == Backend::Te) {
        if (const Availability t = te_impl_availability(resolved.te_impl, resolved.device, device); !t.available) {
            throw ConfigError(t.reason);
        }
    }
    if (const auto problem = memory_problem(resolved, device, host_memory_available(), scope)) {
        throw ConfigError(*problem);
    }
    if (resolved.dist.enabled()) {
        if (resolved.dist.backend == DistBackend::Auto) {
            resolved.dist.backend = resolved.device == DeviceKind::Cuda ? DistBackend::Nccl : DistBackend::Gloo;
        }
        if (resolved.dist.backend == DistBackend::Nccl && resolved.device != DeviceKind::Cuda) {
            throw ConfigError("--dist-backend nccl: NCCL runs on GPUs and this run is on the CPU; allowed: gloo");
        }
        if (resolved.device == DeviceKind::Cuda && resolved.dist.nproc > std::max(1, device.gpu_count)) {
            throw ConfigError("--nproc " + std::to_string(resolved.dist.nproc) + ": one GPU per process and this machine has " +
                              std::to_string(device.gpu_count) + "; allowed: at most " + std::to_string(std::max(1, device.gpu_count)) +
                              " on cuda, or --device cpu for CPU processes");
        }
    }
    if (resolved.name.empty()) {
        resolved.name = std::string(to_string(resolved.backend)) + " " + std::string(to_string(resolved.precision)) + " " +
                        std::string(to_string(resolved.device));
        if (resolved.dist.enabled()) {
            resolved.name += " x" + std::to_string(resolved.dist.nproc) + " " + std::string(to_string(resolved.dist.backend));
        }
    }
    return resolved;
}

RunConfig make_preset(Preset preset) {
    RunConfig config;
    if (preset == Preset::QuickCpu) {
        config.device = DeviceKind::Cpu;
        config.model = ModelShape{2, 128, 4, 32, 256};
        config.batch = 8;
        config.warmup = 5;
        config.iters = 55;
        config.lr = 3e-3;
    }
    return config;
}

std::string_view preset_title(Preset preset) {
    return preset == Preset::QuickCpu ? "Quick CPU" : "Seed benchmark";
}

std::string preset_summary(Preset preset) {
    const RunConfig c = make_preset(preset);
    return std::to_string(c.model.layers) + " layers, hidden " + std::to_string(c.model.hidden) + ", seq " +
           std::to_string(c.model.seq) + ", batch " + std::to_string(c.batch) + ", " + std::to_string(c.warmup) + " + " +
           std::to_string(c.iters) + " steps" + (c.device == DeviceKind::Cpu ? ", CPU" : "");
}

bool parse_on_off(std::string_view flag, std::string_view text) {
    return kOnOffNames.parse(flag, text);
}

int parse_int(std::string_view flag, std::string_view text) {
    int value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error == std::errc::result_out_of_range) {
        // The range the setting really allows, not the int's: `--iters 2147483648` is told "1 to 1000000".
        const std::optional<Limits> limits = limits_of(flag);
        throw ConfigError(std::string(flag) + " " + quoted(text) + ": out of range; allowed: " +
                          (limits ? std::to_string(limits->min) + " to " + std::to_string(limits->max)
                                  : "a whole number from " + std::to_string(std::numeric_limits<int>::min()) + " to " +
                                        std::to_string(std::numeric_limits<int>::max())));
    }
    if (error != std::errc{} || end != text.data() + text.size() || text.empty()) {
        throw ConfigError(std::string(flag) + " " + quoted(text) + ": not a whole number; allowed: digits, e.g. 12");
    }
    return value;
}

std::uint64_t parse_uint64(std::string_view flag, std::string_view text) {
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error == std::errc::result_out_of_range) {
        throw ConfigError(std::string(flag) + " " + quoted(text) + ": number too large; allowed: 0 to " +
                          std::to_string(std::numeric_limits<std::int64_t>::max()));
    }
    if (error != std::errc{} || end != text.data() + text.size() || text.empty()) {
        throw ConfigError(std::string(flag) + " " + quoted(text) +
                          ": not a non-negative whole number; allowed: digits, e.g. 1234");
    }
    return value;
}

double parse_double(std::string_view flag, std::string_view text) {
    double value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error == std::errc::result_out_of_range) {
        throw ConfigError(std::string(flag) + " " + quoted(text) + ": number out of the range of a double; allowed: e.g. 3e-4");
    }
    if (error != std::errc{} || end != text.data() + text.size() || text.empty()) {
        throw ConfigError(std::string(flag) + " " + quoted(text) + ": not a number; allowed: a decimal number, e.g. 3e-4");
    }
    return value;
}

}  // namespace tewb

#include "core/config/RunConfig.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "core/common/Choice.h"
#include "core/common/Error.h"
#include "core/common/NumberText.h"
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
constexpr std::size_t kMaxPathLength = 4096;
constexpr int kFfnMultiple = 64;  // the SwiGLU's intermediate size: whole 64-wide tiles of the GEMMs
constexpr double kMaxValFraction = 0.5;
constexpr int kByteVocab = 256;

// Every digit the value needs to read back exactly ("0.5000001 ... at most 0.5", not "0.5 ... at most 0.5").
std::string format_number(double value) {
    return readable_number(value);
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
        {"--nproc", {1, kMaxProcesses}},  // 0 is "not a job", which the flag cannot ask for
        {"--master-port", {1, kMaxPort}},
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

// A setting only llama has, given a value other than its default on a gpt.
void check_llama_only(std::vector<ConfigProblem>& problems, const RunConfig& c, std::string_view id, bool is_default) {
    if (c.model.arch == Arch::Llama || is_default) return;
    problems.push_back({std::string(id), llama_only_problem(id, c)});
}

std::string divisors_text(int n) {
    std::string out;
    for (int d = 1; d <= n; ++d) {
        if (n % d != 0) continue;
        if (!out.empty()) out += '|';
        out += std::to_string(d);
    }
    return out;
}

void find_model_problems(std::vector<ConfigProblem>& problems, const RunConfig& c) {
    const ModelShape& m = c.model;
    check_llama_only(problems, c, "kv-heads", m.kv_heads == 0);
    check_llama_only(problems, c, "ffn", m.ffn == 0);
    check_llama_only(problems, c, "rope-base", m.rope_base == kDefaultRopeBase);
    if (m.arch != Arch::Llama) return;
    check_range(problems, "kv-heads", m.kv_heads);
    if (m.kv_heads > 0 && m.heads > 0 && m.heads % m.kv_heads != 0) {
        std::string message = "--kv-heads " + std::to_string(m.kv_heads) + ": does not divide --heads ";
        message += std::to_string(m.heads);
        message += " (each key/value head serves a whole group of query heads); allowed: ";
        message += m.heads <= 1024 ? divisors_text(m.heads) : std::string("a divisor of --heads");
        problems.push_back({"kv-heads", std::move(message)});
    }
    const std::int64_t ffn_max = setting("ffn").valid->max;
    if (m.ffn < 0 || (m.ffn % kFfnMultiple != 0 && m.ffn <= ffn_max)) {
        std::string message = "--ffn " + std::to_string(m.ffn) + ": not a positive multiple of ";
        message += std::to_string(kFfnMultiple);
        message += "; allowed: a multiple of 64 up to ";
        message += std::to_string(ffn_max);
        message += ", or 0 for 8/3 x --hidden rounded up to a multiple of 64";
        problems.push_back({"ffn", std::move(message)});
    } else {
        check_range(problems, "ffn", m.ffn);
    }
    if (m.hidden > 0 && m.heads > 0 && m.hidden % m.heads == 0 && (m.hidden / m.heads) % 2 != 0) {
        std::string message = "--hidden " + std::to_string(m.hidden) + " --heads ";
        message += std::to_string(m.heads);
        message += ": head size ";
        message += std::to_string(m.hidden / m.heads);
        message += " is odd and rotary embeddings rotate pairs of a head's dimensions; allowed with --arch llama: an even "
                   "hidden / heads";
        problems.push_back({"heads", std::move(message)});
    }
    // The rotary tables need base > 1 (core/model/Rotary.cpp): at or below 1 the frequencies do not fall with the
    // dimension, and the run used to fail at its first step instead of here.
    if (!std::isfinite(m.rope_base) || m.rope_base <= 1.0) {
        problems.push_back({"rope-base", "--rope-base " + format_number(m.rope_base) +
                                             (std::isfinite(m.rope_base) ? ": out of range" : ": not a finite number") +
                                             "; allowed: a number greater than 1 (default " +
                                             std::to_string(kDefaultRopeBase) + ")"});
    }
}

// A setting of the token file's, given without one.
void check_needs_data(std::vector<ConfigProblem>& problems, const RunConfig& c, std::string_view id, bool is_default) {
    if (c.data.from_file() || is_default) return;
    problems.push_back({std::string(id), needs_data_problem(id, c)});
}

void find_data_problems(std::vector<ConfigProblem>& problems, const RunConfig& c) {
    const DataSettings& d = c.data;
    check_needs_data(problems, c, "data-format", d.format == TokenFormat::Auto);
    check_needs_data(problems, c, "val-fraction", d.val_fraction == DataSettings{}.val_fraction);
    check_needs_data(problems, c, "eval-every", d.eval_every == 0);
    if (!d.from_file()) return;
    if (const auto problem = text_problem(d.path, kMaxPathLength)) {
        problems.push_back({"data", "--data " + printable_text(d.path) + ": " + *problem + "; allowed: a UTF-8 path"});
    }
    if (!std::isfinite(d.val_fraction) || d.val_fraction <= 0.0 || d.val_fraction > kMaxValFraction) {
        problems.push_back({"val-fraction", "--val-fraction " + format_number(d.val_fraction) +
                                                (std::isfinite(d.val_fraction) ? ": out of range" : ": not a finite number") +
                                                "; allowed: greater than 0 and at most " + format_number(kMaxValFraction) +
                                                " (the held-out tail's share of the file's tokens)"});
    }
    const std::size_t before = problems.size();
    check_range(problems, "eval-every", d.eval_every);
    if (problems.size() == before && d.eval_every > c.total_steps()) {
        std::string message = "--eval-every " + std::to_string(d.eval_every) + ": beyond the run's ";
        message += std::to_string(c.total_steps());
        message += " steps (--warmup plus --iters); allowed: 1 to ";
        message += std::to_string(c.total_steps());
        message += ", or 0 for five evaluations over the run";
        problems.push_back({"eval-every", std::move(message)});
    }
    if (d.format == TokenFormat::Bytes && c.model.vocab < kByteVocab) {
        std::string message = "--vocab " + std::to_string(c.model.vocab) + ": below ";
        message += std::to_string(kByteVocab);
        message += " and --data-format bytes makes every byte a token (0 to 255); allowed with bytes: --vocab 256 or more";
        problems.push_back({"vocab", std::move(message)});
    }
}

// A setting's value as a message shows it: reals as printed by default ("500000", where the shortest text is "5e+05").
std::string value_text(const RunSetting& s, const RunConfig& config) {
    return s.kind == SettingKind::Real ? format_number(std::get<double>(s.get(config))) : setting_text(s, config);
}

}  // namespace

std::string llama_only_problem(std::string_view id, const RunConfig& config) {
    const RunSetting& s = setting(id);
    const std::string_view reason = id == "kv-heads" ? "grouped-query attention is llama's (a gpt's attention is multi-head)"
                                    : id == "ffn"    ? "the SwiGLU MLP's size is llama's (a gpt's MLP is 4 x --hidden)"
                                                     : "rotary position embeddings are llama's (a gpt learns its positions)";
    std::string message(s.flag);
    message += ' ';
    message += value_text(s, config);
    message += ": ";
    message += reason;
    message += "; allowed with --arch gpt: leave it out (or --arch llama)";
    return message;
}

std::string needs_data_problem(std::string_view id, const RunConfig& config) {
    const RunSetting& s = setting(id);
    std::string message(s.flag);
    message += ' ';
    message += value_text(s, config);
    message += ": a setting of the token file and this run has none (it trains on synthetic tokens); allowed: --data PATH "
               "with it, or leave it out";
    return message;
}

std::optional<std::string> name_problem(std::string_view name) {
    const std::string allowed = "; allowed: printable UTF-8 text of at most " + std::to_string(kMaxRunNameLength) +
                                " characters, without bidirectional controls (" + std::string(kBidiControls) + ")";
    if (const auto problem = text_problem(name, kMaxRunNameLength)) {
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
    find_model_problems(problems, c);
    find_data_problems(problems, c);
    // Every other whole-number setting that applies here (a row added to the table included), against its row's range.
    for (const RunSetting& s : run_settings()) {
        if (s.kind != SettingKind::Integer || !s.valid || s.id == "seed" || !setting_written(s, c)) continue;
        const bool named = std::any_of(problems.begin(), problems.end(), [&](const ConfigProblem& p) { return p.field == s.id; });
        if (!named) check_range(problems, s.id, std::get<std::int64_t>(s.get(c)));
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
    return std::string(shape.arch == Arch::Llama ? "--arch llama " : "") + "--layers " + std::to_string(shape.layers) +
           " --hidden " + std::to_string(shape.hidden) + " --seq " +
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
        // A recipe other than the default one is part of the name: runs that differ only in it stay apart in tables.
        const bool recipe = resolved.precision == Precision::Fp8 && resolved.fp8.scaling != ScalingKind::Delayed;
        resolved.name = std::string(resolved.model.arch == Arch::Llama ? "llama " : "") +
                        std::string(to_string(resolved.backend)) + " " + std::string(to_string(resolved.precision)) + " " +
                        (recipe ? std::string(to_string(resolved.fp8.scaling)) + " " : std::string()) +
                        std::string(to_string(resolved.device));
        if (resolved.dist.enabled()) {
            resolved.name += " x" + std::to_string(resolved.dist.nproc) + " " + std::string(to_string(resolved.dist.backend));
        }
    }
    return resolved;
}

RunConfig make_preset(Preset preset) {
    RunConfig config;
    if (preset == Preset::QuickCpu || preset == Preset::QuickCpuLlama) {
        config.device = DeviceKind::Cpu;
        config.model = ModelShape{2, 128, 4, 32, 256};
        config.batch = 8;
        config.warmup = 5;
        config.iters = 55;
        config.lr = 3e-3;
    }
    if (preset == Preset::LlamaSeed || preset == Preset::QuickCpuLlama) {
        config.model.arch = Arch::Llama;
        config.model.kv_heads = preset == Preset::LlamaSeed ? 4 : config.model.heads / 2;
    }
    return config;
}

std::span<const Preset> all_presets() {
    static constexpr std::array<Preset, 4> kPresets{Preset::Seed, Preset::QuickCpu, Preset::LlamaSeed, Preset::QuickCpuLlama};
    return kPresets;
}

std::string_view preset_title(Preset preset) {
    switch (preset) {
    case Preset::Seed:
        return "Seed benchmark";
    case Preset::QuickCpu:
        return "Quick CPU";
    case Preset::LlamaSeed:
        return "Llama seed";
    case Preset::QuickCpuLlama:
        return "Quick CPU Llama";
    }
    return "Seed benchmark";
}

std::string preset_summary(Preset preset) {
    const RunConfig c = make_preset(preset);
    std::string out = std::to_string(c.model.layers) + " layers, hidden " + std::to_string(c.model.hidden) + ", seq " +
                      std::to_string(c.model.seq) + ", batch " + std::to_string(c.batch) + ", " + std::to_string(c.warmup) +
                      " + " + std::to_string(c.iters) + " steps";
    if (c.model.arch == Arch::Llama) {
        out += ", llama, ";
        out += std::to_string(effective_kv_heads(c.model));
        out += " KV heads";
    }
    if (c.device == DeviceKind::Cpu) out += ", CPU";
    return out;
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

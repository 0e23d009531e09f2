#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/Choice.h"
#include "core/common/ConfigProblem.h"
#include "core/common/TeImpl.h"
#include "core/device/DeviceInfo.h"
#include "core/fp8/Recipe.h"
#include "core/model/ModelShape.h"

namespace tewb {

inline constexpr int kMaxRepeats = 100;  // --repeat's upper limit (a series of runs of one configuration)
inline constexpr int kMaxProcesses = 64;  // --nproc's upper limit (a data-parallel job's processes on one machine)
inline constexpr int kMaxPort = 65535;    // --master-port's

enum class DeviceKind { Auto, Cpu, Cuda };
enum class Precision { Auto, Fp32, Bf16, Fp8 };
enum class DistBackend { Auto, Gloo, Nccl };  // Auto: NCCL on CUDA, Gloo on the CPU

// Data-parallel training on PyTorch's distributed runtime (c10d). `nproc` 0 is a plain run; 1 or more is a
// job of that many processes (ranks), each training `batch` sequences of its own per step, gradients
// all-reduced in buckets of `bucket_mb` while the backward runs (1 measures the machinery alone).
struct DistSettings {
    int nproc = 0;
    DistBackend backend = DistBackend::Auto;
    double bucket_mb = 25;
    bool amax_reduction = true;  // FP8: every rank's amaxes reduced (max) before the scale update
    int timeout_s = 120;         // a rank that does not arrive or answer within it stops the job

    bool enabled() const { return nproc > 0; }
    int world_size() const { return nproc > 0 ? nproc : 1; }
    friend bool operator==(const DistSettings&, const DistSettings&) = default;
};

// What a run trains on. Without a path: the synthetic token streams (SyntheticData.h). With one: the file's
// tokens (core/data/TokenFile.h), read as batches need them, batches drawn at seeded random offsets from all but a held-out
// tail of `val_fraction` of the tokens, whose loss is evaluated every `eval_every` steps (0: five evaluations
// over the run, the last at the last step).
enum class TokenFormat { Auto, Bytes, Uint16, Llmc };

struct DataSettings {
    std::string path;
    TokenFormat format = TokenFormat::Auto;  // auto: llm.c's header when its magic is there, else .bin uint16, else bytes
    double val_fraction = 0.05;
    int eval_every = 0;

    bool from_file() const { return !path.empty(); }
    friend bool operator==(const DataSettings&, const DataSettings&) = default;
};

// Plain settings of one run. Defaults are the seed's benchmark. `device` and `precision` may be Auto
// until resolve() fixes them for the machine at hand.
struct RunConfig {
    std::string name;
    DeviceKind device = DeviceKind::Auto;
    Backend backend = Backend::Torch;
    Precision precision = Precision::Auto;
    ModelShape model;
    int batch = 32;
    int warmup = 10;
    int iters = 30;
    double lr = 3e-4;
    std::uint64_t seed = 1234;
    // Used when precision is fp8 (te backend): the recipe, and whether to count saturated and
    // underflowed elements per cast (costs a pass over every cast tensor).
    Fp8Recipe fp8 = Fp8Recipe::seed_defaults();
    bool inspect_fp8 = false;
    // On CUDA, capture the whole training step (forward, backward, FP8 scale updates, AdamW) as one CUDA
    // graph after the warm-up steps and replay it per timed step. Ignored on the CPU; the record says
    // whether a graph ran and, if not, why.
    bool cuda_graph = true;
    DistSettings dist;
    // --te-impl (environment form: TEWB_TE_IMPL; the flag wins). Applies to the te backend only.
    TeImpl te_impl = TeImpl::Auto;
    DataSettings data;

    int total_steps() const { return warmup + iters; }
    // The whole job's tokens per step: every rank's batch.
    std::int64_t tokens_per_step() const { return static_cast<std::int64_t>(batch) * model.seq * dist.world_size(); }
    friend bool operator==(const RunConfig&, const RunConfig&) = default;
};

// Why a run name is not acceptable (invalid UTF-8, a control character, a bidirectional control, longer than
// kMaxRunNameLength bytes), or nothing. The same rule holds for --name, the GUI's name field and names in imported
// records.
inline constexpr std::size_t kMaxRunNameLength = 200;
std::optional<std::string> name_problem(std::string_view name);

// Why a llama-only setting ("kv-heads", "ffn", "rope-base") cannot go with --arch gpt, and why a token file's setting
// ("data-format", "val-fraction", "eval-every") cannot go without --data: "--ffn 1024: ...; allowed: ...".
// find_problems says it for values other than the defaults; te-bench also for flags given with their defaults.
std::string llama_only_problem(std::string_view id, const RunConfig& config);
std::string needs_data_problem(std::string_view id, const RunConfig& config);

// Every problem found without looking at the hardware; empty when the configuration is valid.
std::vector<ConfigProblem> find_problems(const RunConfig& config);
// Throws ConfigError with the first problem.
void validate(const RunConfig& config);
// Validates, then fixes Auto device and precision for this machine: CUDA with BF16 when a GPU is usable,
// else CPU with FP32. Throws ConfigError when the request cannot run here (e.g. --device cuda, no GPU).
// Whose memory the check in resolve() counts: the whole job on this machine (a plain run, or a data-parallel
// job about to start its N processes here), or one rank's own process (a rank started by a launcher, which
// checked the job).
enum class MemoryScope { WholeJob, OneRank };
RunConfig resolve(const RunConfig& config, const DeviceInfo& device, MemoryScope scope = MemoryScope::WholeJob);

// Refuses a resolved configuration whose estimated training memory (MemoryEstimate.h) exceeds what the
// device has: free GPU memory for CUDA runs (each rank has its own GPU), `host_available` (HostMemory.h) for
// CPU runs, where a data-parallel job's N processes share it (scope WholeJob counts all N). resolve() calls
// it; nothing when it fits or nothing is known to compare with.
std::optional<std::string> memory_problem(const RunConfig& resolved, const DeviceInfo& device,
                                          std::optional<std::uint64_t> host_available,
                                          MemoryScope scope = MemoryScope::WholeJob);

// seed and quick-cpu train the gpt; llama-seed and quick-cpu-llama the same sizes as a llama with grouped-query
// attention (a third of the heads as key/value heads at the seed's size, half at the quick size).
enum class Preset { Seed, QuickCpu, LlamaSeed, QuickCpuLlama };
RunConfig make_preset(Preset preset);
// Every preset, in the order menus and help texts list them.
std::span<const Preset> all_presets();
// For menus and help texts: "Seed benchmark", and what the preset sets, read from make_preset:
// "12 layers, hidden 768, seq 96, batch 32, 10 + 30 steps" (a llama's adds "llama, 4 KV heads").
std::string_view preset_title(Preset preset);
std::string preset_summary(Preset preset);

template <>
struct EnumNames<DeviceKind> {
    static constexpr NameTable table{
        std::to_array<Named<DeviceKind>>({{"auto", DeviceKind::Auto}, {"cpu", DeviceKind::Cpu}, {"cuda", DeviceKind::Cuda}})};
};
template <>
struct EnumNames<Backend> {
    static constexpr NameTable table{std::to_array<Named<Backend>>({{"torch", Backend::Torch}, {"te", Backend::Te}})};
};
template <>
struct EnumNames<Arch> {
    static constexpr NameTable table{std::to_array<Named<Arch>>({{"gpt", Arch::Gpt}, {"llama", Arch::Llama}})};
};
template <>
struct EnumNames<TokenFormat> {
    static constexpr NameTable table{std::to_array<Named<TokenFormat>>(
        {{"auto", TokenFormat::Auto}, {"bytes", TokenFormat::Bytes}, {"uint16", TokenFormat::Uint16}, {"llmc", TokenFormat::Llmc}})};
};
template <>
struct EnumNames<Precision> {
    static constexpr NameTable table{std::to_array<Named<Precision>>(
        {{"auto", Precision::Auto}, {"fp32", Precision::Fp32}, {"bf16", Precision::Bf16}, {"fp8", Precision::Fp8}})};
};
template <>
struct EnumNames<Preset> {
    static constexpr NameTable table{std::to_array<Named<Preset>>({{"seed", Preset::Seed},
                                                                   {"quick-cpu", Preset::QuickCpu},
                                                                   {"llama-seed", Preset::LlamaSeed},
                                                                   {"quick-cpu-llama", Preset::QuickCpuLlama}})};
};
template <>
struct EnumNames<DistBackend> {
    static constexpr NameTable table{std::to_array<Named<DistBackend>>(
        {{"auto", DistBackend::Auto}, {"gloo", DistBackend::Gloo}, {"nccl", DistBackend::Nccl}})};
};

// Text to value for settings given as text (CLI flags, JSON records). `flag` names the setting in the
// error ("--hidden"). All throw ConfigError with the value and what is allowed.
bool parse_on_off(std::string_view flag, std::string_view text);  // "on" | "off"
int parse_int(std::string_view flag, std::string_view text);
std::uint64_t parse_uint64(std::string_view flag, std::string_view text);
double parse_double(std::string_view flag, std::string_view text);

}  // namespace tewb

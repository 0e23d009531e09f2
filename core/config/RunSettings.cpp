#include "core/config/RunSettings.h"

#include <array>
#include <limits>
#include <stdexcept>
#include <vector>

#include "core/common/Choice.h"
#include "core/common/Error.h"
#include "core/common/NumberText.h"
#include "core/common/TextCheck.h"
#include "core/fp8/Fp8Format.h"

namespace tewb {

namespace {

constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

std::int64_t whole(const SettingValue& v) { return std::get<std::int64_t>(v); }
int small(const SettingValue& v) { return static_cast<int>(std::get<std::int64_t>(v)); }
double real(const SettingValue& v) { return std::get<double>(v); }
bool truth(const SettingValue& v) { return std::get<bool>(v); }
const std::string& name(const SettingValue& v) { return std::get<std::string>(v); }
template <typename E>
SettingValue name_of(E value) {
    return std::string(to_string(value));
}

// The rows, in the reproducing command line's order. Valid ranges are validation's (RunConfig.cpp reads them
// here); stored ranges are what records have always been read with.
// (Read through functions only, never from another file's static initialisation.)
const std::array<RunSetting, 39> kSettings{{
    {.id = "device", .flag = "--device", .section = SettingSection::Config, .json_key = "device", .label = "Device",
     .kind = SettingKind::Choice, .use = SettingUse::Always,
     .help = "auto | cpu | cuda",
     .default_words = "default auto: the GPU when one is usable",
     .value_name = "NAME",
     .get = [](const RunConfig& c) { return name_of(c.device); },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view at) { c.device = parse_name<DeviceKind>(at, name(v)); }},
    {.id = "backend", .flag = "--backend", .section = SettingSection::Config, .json_key = "backend", .label = "Backend",
     .kind = SettingKind::Choice, .use = SettingUse::Always,
     .help = "torch | te",
     .value_name = "NAME",
     .commands = kRunCommand,
     .get = [](const RunConfig& c) { return name_of(c.backend); },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view at) { c.backend = parse_name<Backend>(at, name(v)); }},
    {.id = "precision", .flag = "--precision", .section = SettingSection::Config, .json_key = "precision",
     .label = "Precision", .kind = SettingKind::Choice, .use = SettingUse::Always,
     .help = "auto | fp32 | bf16 | fp8",
     .default_words = "default auto: bf16 on a GPU, fp32 on the CPU; fp8 needs --backend te",
     .value_name = "NAME",
     .commands = kRunCommand,
     .get = [](const RunConfig& c) { return name_of(c.precision); },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view at) { c.precision = parse_name<Precision>(at, name(v)); }},
    {.id = "arch", .flag = "--arch", .section = SettingSection::Model, .json_key = "arch", .label = "Architecture",
     .kind = SettingKind::Choice, .use = SettingUse::NotDefault,
     .when_absent = SettingValue{std::string("gpt")},  // records from before --arch trained the gpt
     .help = "gpt | llama",
     .default_words = "default gpt: learned positions, LayerNorm with biases, 4x GELU MLP, multi-head attention; "
         "llama: RMSNorm without biases, SwiGLU MLP, rotary position embeddings, grouped-query "
         "attention",
     .value_name = "NAME",
     .get = [](const RunConfig& c) { return name_of(c.model.arch); },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view at) { c.model.arch = parse_name<Arch>(at, name(v)); }},
    {.id = "layers", .flag = "--layers", .section = SettingSection::Config, .json_key = "layers", .label = "Layers",
     .kind = SettingKind::Integer, .use = SettingUse::Always, .valid = IntRange{1, 256}, .stored = IntRange{1, kIntMax},
     .help = "transformer blocks",
     .get = [](const RunConfig& c) -> SettingValue { return std::int64_t{c.model.layers}; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.model.layers = small(v); }},
    {.id = "hidden", .flag = "--hidden", .section = SettingSection::Config, .json_key = "hidden", .label = "Hidden size",
     .kind = SettingKind::Integer, .use = SettingUse::Always, .valid = IntRange{1, 32768}, .stored = IntRange{1, kIntMax},
     .help = "hidden size",
     .commands = kRunAndCompare,
     .get = [](const RunConfig& c) -> SettingValue { return std::int64_t{c.model.hidden}; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.model.hidden = small(v); }},
    {.id = "heads", .flag = "--heads", .section = SettingSection::Config, .json_key = "heads", .label = "Heads",
     .kind = SettingKind::Integer, .use = SettingUse::Always, .valid = IntRange{1, 1024}, .stored = IntRange{1, kIntMax},
     .help = "attention heads; must divide --hidden",
     .commands = kRunAndCompare,
     .get = [](const RunConfig& c) -> SettingValue { return std::int64_t{c.model.heads}; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.model.heads = small(v); }},
    {.id = "seq", .flag = "--seq", .section = SettingSection::Config, .json_key = "seq", .label = "Sequence",
     .kind = SettingKind::Integer, .use = SettingUse::Always, .valid = IntRange{1, 65536}, .stored = IntRange{1, kIntMax},
     .help = "sequence length",
     .commands = kRunAndCompare,
     .get = [](const RunConfig& c) -> SettingValue { return std::int64_t{c.model.seq}; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.model.seq = small(v); }},
    {.id = "vocab", .flag = "--vocab", .section = SettingSection::Config, .json_key = "vocab", .label = "Vocabulary",
     .kind = SettingKind::Integer, .use = SettingUse::Always, .valid = IntRange{2, 1 << 20}, .stored = IntRange{2, kIntMax},
     .help = "vocabulary size",
     .default_note = "; with --data at least the largest token + 1",
     .get = [](const RunConfig& c) -> SettingValue { return std::int64_t{c.model.vocab}; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.model.vocab = small(v); }},
    {.id = "kv-heads", .flag = "--kv-heads", .section = SettingSection::Model, .json_key = "kv_heads", .label = "KV heads",
     .kind = SettingKind::Integer, .use = SettingUse::Llama, .valid = IntRange{0, 1024}, .stored = IntRange{0, kIntMax},
     .when_absent = SettingValue{std::int64_t{0}},
     .help = "llama: key/value heads, a divisor of --heads",
     .default_words = "default: as many as --heads, ordinary multi-head attention",
     .get = [](const RunConfig& c) -> SettingValue { return std::int64_t{c.model.kv_heads}; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.model.kv_heads = small(v); }},
    {.id = "ffn", .flag = "--ffn", .section = SettingSection::Model, .json_key = "ffn", .label = "FFN size",
     .kind = SettingKind::Integer, .use = SettingUse::Llama, .valid = IntRange{0, 1 << 20}, .stored = IntRange{0, kIntMax},
     .when_absent = SettingValue{std::int64_t{0}},
     .help = "llama: the SwiGLU's intermediate size, a multiple of 64",
     .default_words = "default 8/3 x --hidden rounded up to a multiple of 64",
     .get = [](const RunConfig& c) -> SettingValue { return std::int64_t{c.model.ffn}; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.model.ffn = small(v); }},
    {.id = "rope-base", .flag = "--rope-base", .section = SettingSection::Model, .json_key = "rope_base", .label = "RoPE base",
     .kind = SettingKind::Real, .use = SettingUse::Llama, .when_absent = SettingValue{double{kDefaultRopeBase}},
     .help = "llama: the rotary embeddings' base",
     .value_name = "X",
     .get = [](const RunConfig& c) -> SettingValue { return c.model.rope_base; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.model.rope_base = real(v); }},
    {.id = "batch", .flag = "--batch", .section = SettingSection::Config, .json_key = "batch", .label = "Batch",
     .kind = SettingKind::Integer, .use = SettingUse::Always, .valid = IntRange{1, 65536}, .stored = IntRange{1, kIntMax},
     .help = "sequences per step",
     .commands = kRunAndCompare,
     .get = [](const RunConfig& c) -> SettingValue { return std::int64_t{c.batch}; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.batch = small(v); }},
    {.id = "warmup", .flag = "--warmup", .section = SettingSection::Config, .json_key = "warmup", .label = "Warm-up steps",
     .kind = SettingKind::Integer, .use = SettingUse::Always, .valid = IntRange{0, 1'000'000}, .stored = IntRange{0, kIntMax},
     .help = "untimed warm-up steps",
     .commands = kRunAndCompare,
     .get = [](const RunConfig& c) -> SettingValue { return std::int64_t{c.warmup}; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.warmup = small(v); }},
    {.id = "iters", .flag = "--iters", .section = SettingSection::Config, .json_key = "iters", .label = "Timed steps",
     .kind = SettingKind::Integer, .use = SettingUse::Always, .valid = IntRange{1, 1'000'000}, .stored = IntRange{0, kIntMax},
     .help = "timed steps",
     .commands = kRunAndCompare,
     .get = [](const RunConfig& c) -> SettingValue { return std::int64_t{c.iters}; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.iters = small(v); }},
    {.id = "lr", .flag = "--lr", .section = SettingSection::Config, .json_key = "lr", .label = "Learning rate",
     .kind = SettingKind::Real, .use = SettingUse::Always,
     .help = "AdamW learning rate",
     .value_name = "X",
     .commands = kRunAndCompare,
     .get = [](const RunConfig& c) -> SettingValue { return c.lr; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.lr = real(v); }},
    {.id = "seed", .flag = "--seed", .section = SettingSection::Config, .json_key = "seed", .label = "Seed",
     .kind = SettingKind::Integer, .use = SettingUse::Always, .valid = IntRange{0, kInt64Max}, .stored = IntRange{0, kInt64Max},
     .help = "seed of weights and data",
     .get = [](const RunConfig& c) -> SettingValue { return static_cast<std::int64_t>(c.seed); },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.seed = static_cast<std::uint64_t>(whole(v)); }},
    {.id = "data", .flag = "--data", .section = SettingSection::Data, .json_key = "path", .label = "Token file",
     .kind = SettingKind::Text, .use = SettingUse::DataFile,
     .help = "train on this token file instead of synthetic tokens: any bytes (UTF-8 text) as byte "
         "tokens, nanoGPT's uint16 .bin or llm.c's token file; read where a batch needs it (a large "
         "file costs no memory), batches at seeded random offsets, a held-out tail for validation",
     .value_name = "PATH",
     .get = [](const RunConfig& c) -> SettingValue { return c.data.path; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.data.path = name(v); }},
    {.id = "data-format", .flag = "--data-format", .section = SettingSection::Data, .json_key = "format",
     .label = "File format", .kind = SettingKind::Choice, .use = SettingUse::DataFile,
     .help = "auto | bytes | uint16 | llmc",
     .default_words = "default auto: llm.c's when its header is there, else uint16 for .bin, else bytes",
     .value_name = "NAME",
     .get = [](const RunConfig& c) { return name_of(c.data.format); },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view at) { c.data.format = parse_name<TokenFormat>(at, name(v)); }},
    {.id = "val-fraction", .flag = "--val-fraction", .section = SettingSection::Data, .json_key = "val_fraction",
     .label = "Validation fraction", .kind = SettingKind::Real, .use = SettingUse::DataFile,
     .help = "the share of the file's tokens held out at its end for validation, greater than 0 and at "
         "most 0.5",
     .value_name = "X",
     .get = [](const RunConfig& c) -> SettingValue { return c.data.val_fraction; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.data.val_fraction = real(v); }},
    {.id = "eval-every", .flag = "--eval-every", .section = SettingSection::Data, .json_key = "eval_every",
     .label = "Evaluate every", .kind = SettingKind::Integer, .use = SettingUse::DataFile, .valid = IntRange{0, 1'000'000},
     .stored = IntRange{0, kIntMax},
     .help = "evaluate the validation loss every N steps, and at the last",
     .default_words = "default 0: five evaluations per run",
     .get = [](const RunConfig& c) -> SettingValue { return std::int64_t{c.data.eval_every}; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.data.eval_every = small(v); }},
    {.id = "cuda-graph", .flag = "--cuda-graph", .section = SettingSection::Config, .json_key = "cuda_graph",
     .label = "Replay each timed step as one CUDA graph", .kind = SettingKind::Switch, .use = SettingUse::Always,
     .when_absent = SettingValue{false},  // records from before the option ran eagerly
     .help = "on | off: on CUDA, replay the whole training step as one CUDA graph after the warm-up",
     .value_name = "on|off",
     .get = [](const RunConfig& c) -> SettingValue { return c.cuda_graph; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.cuda_graph = truth(v); }},
    {.id = "te-impl", .flag = "--te-impl", .section = SettingSection::Config, .json_key = "te_impl",
     .label = "TE implementation", .kind = SettingKind::Choice, .use = SettingUse::NotDefault,
     .when_absent = SettingValue{std::string("auto")},  // records from before --te-impl
     .value_name = "NAME",
     .commands = kNoCommand,
     .get = [](const RunConfig& c) { return name_of(c.te_impl); },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view at) { c.te_impl = parse_name<TeImpl>(at, name(v)); }},
    {.id = "recipe", .flag = "--recipe", .section = SettingSection::Fp8, .json_key = "recipe", .label = "Scaling",
     .kind = SettingKind::Choice, .use = SettingUse::Fp8,
     .help = "FP8 scaling: delayed | current | block (1x128 / 128x128 block scales, E4M3 unless "
         "--fp8-format; real block-scaled GEMMs on Hopper, emulated elsewhere) | mxfp8 (Blackwell's MXFP8: a power-of-two "
         "scale per 32 values, E4M3 unless --fp8-format; emulated) | nvfp4 (Blackwell's NVFP4: 4-bit E2M1 values, an E4M3 "
         "scale per 16, 16x16 for weights; emulated)",
     .value_name = "NAME",
     .get = [](const RunConfig& c) { return name_of(c.fp8.scaling); },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view at) { c.fp8.scaling = parse_name<ScalingKind>(at, name(v)); }},
    {.id = "fp8-format", .flag = "--fp8-format", .section = SettingSection::Fp8, .json_key = "format", .label = "Format",
     .kind = SettingKind::Choice, .use = SettingUse::Fp8,
     .help = "hybrid (E4M3 forward, E5M2 gradients) | e4m3",
     .default_words = "default hybrid; e4m3 with --recipe block or mxfp8; not used by nvfp4",
     .value_name = "NAME",
     .get = [](const RunConfig& c) { return name_of(c.fp8.format); },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view at) { c.fp8.format = parse_recipe_format(at, name(v)); }},
    {.id = "amax-history-len", .flag = "--amax-history-len", .section = SettingSection::Fp8, .json_key = "amax_history_len",
     .label = "Amax history length", .kind = SettingKind::Integer, .use = SettingUse::Fp8,
     .valid = IntRange{1, Fp8Recipe::kMaxHistoryLen}, .stored = IntRange{1, Fp8Recipe::kMaxHistoryLen},
     .help = "amax history per FP8 tensor",
     .default_note = "; Transformer Engine's library default is 1024",
     .help_range = true,
     .get = [](const RunConfig& c) -> SettingValue { return std::int64_t{c.fp8.amax_history_len}; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.fp8.amax_history_len = small(v); }},
    {.id = "amax-algo", .flag = "--amax-algo", .section = SettingSection::Fp8, .json_key = "amax_algo",
     .label = "Amax algorithm", .kind = SettingKind::Choice, .use = SettingUse::Fp8,
     .help = "max (over the history) | most_recent",
     .value_name = "NAME",
     .get = [](const RunConfig& c) { return name_of(c.fp8.algo); },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view at) { c.fp8.algo = parse_name<AmaxAlgo>(at, name(v)); }},
    {.id = "margin", .flag = "--margin", .section = SettingSection::Fp8, .json_key = "margin", .label = "Margin",
     .kind = SettingKind::Integer, .use = SettingUse::Fp8, .valid = IntRange{0, Fp8Recipe::kMaxMargin},
     .stored = IntRange{0, Fp8Recipe::kMaxMargin},
     .help = "scale = fp8_max / 2^margin / amax",
     .help_range = true,
     .get = [](const RunConfig& c) -> SettingValue { return std::int64_t{c.fp8.margin}; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.fp8.margin = small(v); }},
    {.id = "block-scales", .flag = "--block-scales", .section = SettingSection::Fp8, .json_key = "block_power_of_two",
     .label = "Power-of-two block scales", .kind = SettingKind::Switch, .use = SettingUse::BlockFp8, .on_word = "pow2",
     .off_word = "exact", .when_absent = SettingValue{true},
     .help = "with --recipe block: pow2 | exact float32 scales",
     .value_name = "pow2|exact",
     .get = [](const RunConfig& c) -> SettingValue { return c.fp8.block_power_of_two; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.fp8.block_power_of_two = truth(v); }},
    {.id = "nvfp4-stochastic-rounding", .flag = "--nvfp4-stochastic-rounding", .section = SettingSection::Fp8,
     .json_key = "nvfp4_stochastic_rounding", .label = "NVFP4 stochastic rounding", .kind = SettingKind::Switch,
     .use = SettingUse::Nvfp4, .when_absent = SettingValue{true},
     .help = "with --recipe nvfp4: on: gradients rounded stochastically (seeded, reproducible); off: to nearest",
     .value_name = "on|off",
     .get = [](const RunConfig& c) -> SettingValue { return c.fp8.nvfp4_stochastic_rounding; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.fp8.nvfp4_stochastic_rounding = truth(v); }},
    {.id = "nvfp4-hadamard", .flag = "--nvfp4-hadamard", .section = SettingSection::Fp8, .json_key = "nvfp4_hadamard",
     .label = "NVFP4 Hadamard transform", .kind = SettingKind::Switch, .use = SettingUse::Nvfp4,
     .when_absent = SettingValue{true},
     .help = "with --recipe nvfp4: on: the weight-gradient GEMM's inputs pass through the 16-point random Hadamard "
         "transform before their cast; off: cast as they are",
     .value_name = "on|off",
     .get = [](const RunConfig& c) -> SettingValue { return c.fp8.nvfp4_hadamard; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.fp8.nvfp4_hadamard = truth(v); }},
    {.id = "calibrate-first-step", .flag = "--calibrate-first-step", .section = SettingSection::Fp8,
     .json_key = "calibrate_first_step", .label = "Calibrate first step", .kind = SettingKind::Switch,
     .use = SettingUse::DelayedFp8,
     .when_absent = SettingValue{false},  // records from before the option ran their first step at scale 1
     .help = "with --recipe delayed: on: until the first scale update each cast takes the scale its own "
         "amax gives; off: scale 1, as Transformer Engine",
     .value_name = "on|off",
     .get = [](const RunConfig& c) -> SettingValue { return c.fp8.calibrate_first_step; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.fp8.calibrate_first_step = truth(v); }},
    {.id = "inspect-fp8", .flag = "--inspect-fp8", .section = SettingSection::Fp8, .json_key = "inspect",
     .label = "Inspect FP8 casts", .kind = SettingKind::Presence, .use = SettingUse::Fp8, .when_absent = SettingValue{false},
     .help = "also record the fraction of saturated and underflowed elements per cast (slower)",
     .value_name = "",
     .get = [](const RunConfig& c) -> SettingValue { return c.inspect_fp8; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.inspect_fp8 = truth(v); }},
    {.id = "nproc", .flag = "--nproc", .section = SettingSection::Dist, .json_key = "nproc", .label = "Processes",
     .kind = SettingKind::Integer, .use = SettingUse::DataParallel, .valid = IntRange{0, kMaxProcesses},
     .stored = IntRange{1, kIntMax},
     .help = "data-parallel job of N processes on this machine (one per GPU, or N CPU processes with "
         "--device cpu); each trains --batch sequences per step (1: the machinery alone). Under "
         "torchrun or a scheduler (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT set) this "
         "process is one rank",
     .default_words = "default: one process, not a job",
     .commands = kRunCommand,
     .get = [](const RunConfig& c) -> SettingValue { return std::int64_t{c.dist.nproc}; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.dist.nproc = small(v); }},
    {.id = "dist-backend", .flag = "--dist-backend", .section = SettingSection::Dist, .json_key = "backend",
     .label = "Communication backend", .kind = SettingKind::Choice, .use = SettingUse::DataParallel,
     .help = "auto | gloo | nccl",
     .default_words = "default auto: nccl on GPUs, gloo on CPUs",
     .value_name = "NAME",
     .commands = kRunCommand,
     .in_form = false,
     .get = [](const RunConfig& c) { return name_of(c.dist.backend); },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view at) { c.dist.backend = parse_name<DistBackend>(at, name(v)); }},
    {.id = "bucket-mb", .flag = "--bucket-mb", .section = SettingSection::Dist, .json_key = "bucket_mb",
     .label = "Bucket size (MB)", .kind = SettingKind::Real, .use = SettingUse::DataParallel,
     .help = "gradient all-reduce bucket size in MB",
     .value_name = "X",
     .commands = kRunCommand,
     .in_form = false,
     .get = [](const RunConfig& c) -> SettingValue { return c.dist.bucket_mb; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.dist.bucket_mb = real(v); }},
    {.id = "amax-reduction", .flag = "--amax-reduction", .section = SettingSection::Dist, .json_key = "amax_reduction",
     .label = "Amax reduction", .kind = SettingKind::Switch, .use = SettingUse::DataParallel,
     .help = "on | off: FP8 amaxes reduced (max) over ranks before each scale update",
     .value_name = "on|off",
     .commands = kRunCommand,
     .in_form = false,
     .get = [](const RunConfig& c) -> SettingValue { return c.dist.amax_reduction; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.dist.amax_reduction = truth(v); }},
    {.id = "dist-timeout", .flag = "--dist-timeout", .section = SettingSection::Dist, .json_key = "timeout_s",
     .label = "Rank timeout (s)", .kind = SettingKind::Integer, .use = SettingUse::DataParallel,
     .valid = IntRange{1, 3600}, .stored = IntRange{1, kIntMax},
     .help = "seconds a rank may be absent or silent before the job stops",
     .value_name = "S",
     .commands = kRunCommand,
     .in_form = false,
     .get = [](const RunConfig& c) -> SettingValue { return std::int64_t{c.dist.timeout_s}; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.dist.timeout_s = small(v); }},
    {.id = "name", .flag = "--name", .section = SettingSection::Config, .json_key = "name", .label = "Name",
     .kind = SettingKind::Text, .use = SettingUse::NotDefault, .when_absent = SettingValue{std::string()},
     .help = "label of the run in tables, charts and history",
     .value_name = "TEXT",
     .commands = kRunCommand,
     .get = [](const RunConfig& c) -> SettingValue { return c.name; },
     .set = [](RunConfig& c, const SettingValue& v, std::string_view) { c.name = name(v); }},
}};

// Room for ExtraRunSetting's rows: the table is reserved once, so adding one never moves the others (a span or a
// reference from run_settings(), find_setting() or setting() stays valid).
constexpr std::size_t kMostExtraRows = 8;

// The table as read: the rows above, then any ExtraRunSetting's.
std::vector<RunSetting>& table() {
    static std::vector<RunSetting> rows = [] {
        std::vector<RunSetting> all;
        all.reserve(kSettings.size() + kMostExtraRows);
        all.assign(kSettings.begin(), kSettings.end());
        return all;
    }();
    return rows;
}

}  // namespace

ExtraRunSetting::ExtraRunSetting(const RunSetting& row) : id_(row.id) {
    if (table().size() == table().capacity()) throw std::logic_error("ExtraRunSetting: no room for another row");
    if (find_setting(row.id) != nullptr || find_setting(row.flag) != nullptr) {
        throw std::logic_error("ExtraRunSetting: a row '" + std::string(row.id) + "' is already in the table");
    }
    table().push_back(row);
}

ExtraRunSetting::~ExtraRunSetting() {
    if (!table().empty() && table().back().id == id_) table().pop_back();  // removed in reverse order of adding
}

std::span<const RunSetting> run_settings() { return table(); }

const RunSetting* find_setting(std::string_view id_or_flag) {
    for (const RunSetting& s : table()) {
        if (s.id == id_or_flag || s.flag == id_or_flag) return &s;
    }
    return nullptr;
}

const RunSetting& setting(std::string_view id) {
    if (const RunSetting* s = find_setting(id)) return *s;
    throw std::logic_error("no run setting '" + std::string(id) + "'");
}

std::optional<std::string> given_setting_problem(const RunSetting& s, const RunConfig& config) {
    switch (s.use) {
    case SettingUse::Llama:
        if (config.model.arch != Arch::Llama) return llama_only_problem(s.id, config);
        break;
    case SettingUse::DataFile:
        if (s.id != "data" && !config.data.from_file()) return needs_data_problem(s.id, config);
        break;
    case SettingUse::BlockFp8:
        if (config.fp8.scaling != ScalingKind::Block) return std::string(s.flag) + " goes with --recipe block";
        break;
    case SettingUse::Nvfp4:
        if (config.fp8.scaling != ScalingKind::Nvfp4) return std::string(s.flag) + " goes with --recipe nvfp4";
        break;
    case SettingUse::DelayedFp8:
        if (config.fp8.scaling != ScalingKind::Delayed) {
            return std::string(s.flag) + " goes with --recipe delayed (current, block and the microscaling recipes have no first-step scale to "
                                         "calibrate)";
        }
        break;
    default:
        break;
    }
    return std::nullopt;
}

std::string setting_help(const RunSetting& s) {
    std::string help(s.help);
    if (s.help_range && s.valid) help += "; " + std::to_string(s.valid->min) + " to " + std::to_string(s.valid->max);
    if (!s.default_words.empty()) return help + " (" + std::string(s.default_words) + ")";
    if (s.kind == SettingKind::Text || s.kind == SettingKind::Presence) return help;
    // A real number as a person writes it ("0.0003", "25"), not the command line's shortest text ("3e-04").
    const std::string value = s.kind == SettingKind::Real ? readable_number(std::get<double>(s.get(RunConfig{})))
                                                          : setting_text(s, RunConfig{});
    return help + " (default " + value + std::string(s.default_note) + ")";
}

bool fp8_recipe_setting(const RunSetting& s) {
    return s.section == SettingSection::Fp8 && s.kind != SettingKind::Presence;
}

std::string fp8_recipe_flags() {
    std::string flags;
    for (const RunSetting& s : table()) {
        if (!fp8_recipe_setting(s)) continue;
        if (!flags.empty()) flags += "/";
        flags += s.flag;
    }
    return flags;
}

std::string setting_text(const RunSetting& s, const RunConfig& config) {
    const SettingValue value = s.get(config);
    switch (s.kind) {
    case SettingKind::Choice:
    case SettingKind::Text:
        return name(value);
    case SettingKind::Integer:
        return std::to_string(whole(value));
    case SettingKind::Real:
        return shortest_text(real(value));
    case SettingKind::Switch:
        return std::string(truth(value) ? s.on_word : s.off_word);
    case SettingKind::Presence:
        return {};
    }
    return {};
}

void set_setting_from_text(const RunSetting& s, RunConfig& config, std::string_view text) {
    switch (s.kind) {
    case SettingKind::Choice:
    case SettingKind::Text:
        s.set(config, std::string(text), s.flag);
        return;
    case SettingKind::Integer:
        // The seed takes the whole unsigned 64-bit range as text, which validation then narrows.
        s.set(config, s.id == "seed" ? static_cast<std::int64_t>(parse_uint64(s.flag, text)) : std::int64_t{parse_int(s.flag, text)},
              s.flag);
        return;
    case SettingKind::Real:
        s.set(config, parse_double(s.flag, text), s.flag);
        return;
    case SettingKind::Switch:
        if (s.on_word == "on") {
            s.set(config, parse_on_off(s.flag, text), s.flag);
        } else if (text == s.on_word || text == s.off_word) {
            s.set(config, text == s.on_word, s.flag);
        } else {
            throw ConfigError(std::string(s.flag) + " " + quoted(text) + ": unknown; allowed: " + std::string(s.on_word) + ", " +
                              std::string(s.off_word));
        }
        return;
    case SettingKind::Presence:
        s.set(config, true, s.flag);
        return;
    }
}

bool section_written(SettingSection section, const RunConfig& config) {
    switch (section) {
    case SettingSection::Config:
        return true;
    case SettingSection::Fp8:
        return config.precision == Precision::Fp8;
    case SettingSection::Dist:
        return config.dist.enabled();
    case SettingSection::Model:
        return true;
    case SettingSection::Data:
        return config.data.from_file();
    }
    return false;
}

bool setting_written(const RunSetting& s, const RunConfig& config) {
    return section_written(s.section, config) && (s.use != SettingUse::Llama || config.model.arch == Arch::Llama);
}

std::span<const SettingSection> setting_sections() {
    static constexpr std::array<SettingSection, 5> kSections{SettingSection::Config, SettingSection::Fp8, SettingSection::Dist,
                                                             SettingSection::Model, SettingSection::Data};
    return kSections;
}

std::string_view section_key(SettingSection section) {
    switch (section) {
    case SettingSection::Config:
        return "";
    case SettingSection::Fp8:
        return "fp8";
    case SettingSection::Dist:
        return "dist";
    case SettingSection::Model:
        return "model";
    case SettingSection::Data:
        return "data";
    }
    return "";
}

bool setting_in_command_line(const RunSetting& s, const RunConfig& config) {
    if (s.kind == SettingKind::Presence && !std::get<bool>(s.get(config))) return false;
    const bool fp8 = config.precision == Precision::Fp8;
    switch (s.use) {
    case SettingUse::Always:
        return true;
    case SettingUse::Fp8:
        return fp8;
    case SettingUse::DelayedFp8:
        return fp8 && config.fp8.scaling == ScalingKind::Delayed;
    case SettingUse::BlockFp8:
        return fp8 && config.fp8.scaling == ScalingKind::Block;
    case SettingUse::Nvfp4:
        return fp8 && config.fp8.scaling == ScalingKind::Nvfp4;
    case SettingUse::DataParallel:
        return config.dist.enabled();
    case SettingUse::NotDefault:
        return s.get(config) != s.get(RunConfig{});
    case SettingUse::Llama:
        return config.model.arch == Arch::Llama && s.get(config) != s.get(RunConfig{});
    case SettingUse::DataFile:
        return config.data.from_file();
    }
    return false;
}

}  // namespace tewb

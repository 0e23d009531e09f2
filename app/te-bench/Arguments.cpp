#include "Arguments.h"

#include <cstdlib>
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/common/BuildInfo.h"
#include "core/common/Error.h"
#include "core/common/TextCheck.h"
#include "core/config/ComparePlan.h"
#include "core/config/RunSettings.h"
#include "core/fp8/Recipe.h"
#include "core/results/RunRecord.h"

namespace tewb::cli {

namespace {

// "seed (12 layers, ...) | quick-cpu (...) | ...": every preset with what it sets.
std::string presets_help() {
    std::string out;
    for (const Preset preset : all_presets()) {
        if (!out.empty()) out += " | ";
        out += to_string(preset);
        out += " (";
        out += preset_summary(preset);
        out += ')';
    }
    return out;
}

// The architecture and the data: the same flags on run, compare and sweep.
void add_arch_and_data_flags(CLI::App* cmd, RunFlags& f) {
    cmd->add_option("--arch", f.arch,
                    "gpt | llama (default gpt: learned positions, LayerNorm with biases, 4x GELU MLP, multi-head attention; "
                    "llama: RMSNorm without biases, SwiGLU MLP, rotary position embeddings, grouped-query attention)")
        ->type_name("NAME");
    cmd->add_option("--kv-heads", f.kv_heads,
                    "llama: key/value heads, a divisor of --heads (default: as many as --heads, ordinary multi-head attention)")
        ->type_name("N");
    cmd->add_option("--ffn", f.ffn,
                    "llama: the SwiGLU's intermediate size, a multiple of 64 (default 8/3 x --hidden rounded up to a "
                    "multiple of 64)")
        ->type_name("N");
    cmd->add_option("--rope-base", f.rope_base, "llama: the rotary embeddings' base (default 10000)")->type_name("X");
    cmd->add_option("--data", f.data,
                    "train on this token file instead of synthetic tokens: any bytes (UTF-8 text) as byte tokens, nanoGPT's "
                    "uint16 .bin or llm.c's token file; read where a batch needs it (a large file costs no memory), batches at "
                    "seeded random offsets, a held-out tail for validation")
        ->type_name("PATH");
    cmd->add_option("--data-format", f.data_format,
                    "auto | bytes | uint16 | llmc (default auto: llm.c's when its header is there, else uint16 for .bin, "
                    "else bytes)")
        ->type_name("NAME");
    cmd->add_option("--val-fraction", f.val_fraction,
                    "the share of the file's tokens held out at its end for validation, greater than 0 and at most 0.5 "
                    "(default 0.05)")
        ->type_name("X");
    cmd->add_option("--eval-every", f.eval_every,
                    "evaluate the validation loss every N steps, and at the last (default 0: five evaluations per run)")
        ->type_name("N");
}

void add_model_flags(CLI::App* cmd, RunFlags& f) {
    cmd->add_option("--preset", f.preset, presets_help())->type_name("NAME");
    cmd->add_option("--device", f.device, "auto | cpu | cuda (default auto: the GPU when one is usable)")->type_name("NAME");
    cmd->add_option("--layers", f.layers, "transformer blocks (default 12)")->type_name("N");
    cmd->add_option("--hidden", f.hidden, "hidden size (default 768)")->type_name("N");
    cmd->add_option("--heads", f.heads, "attention heads; must divide --hidden (default 12)")->type_name("N");
    cmd->add_option("--seq", f.seq, "sequence length (default 96)")->type_name("N");
    cmd->add_option("--vocab", f.vocab, "vocabulary size (default 4096; with --data at least the largest token + 1)")
        ->type_name("N");
    add_arch_and_data_flags(cmd, f);
    cmd->add_option("--batch", f.batch, "sequences per step (default 32)")->type_name("N");
    cmd->add_option("--warmup", f.warmup, "untimed warm-up steps (default 10)")->type_name("N");
    cmd->add_option("--iters", f.iters, "timed steps (default 30)")->type_name("N");
    cmd->add_option("--lr", f.lr, "AdamW learning rate (default 3e-4)")->type_name("X");
    cmd->add_option("--seed", f.seed, "seed of weights and data (default 1234)")->type_name("N");
    cmd->add_option("--cuda-graph", f.cuda_graph,
                    "on | off: on CUDA, replay the whole training step as one CUDA graph after the warm-up (default on)")
        ->type_name("on|off");
    cmd->add_option("--json", f.json_path, "write the run record(s) as JSON to this file ('-' for stdout)")->type_name("PATH");
    cmd->add_option("--csv", f.csv_path, "write per-step metrics as CSV (long format) to this file")->type_name("PATH");
    cmd->add_option("--fp8-csv", f.fp8_csv_path, "write FP8 statistics (per step and slot: amax, scale, ...) as CSV")
        ->type_name("PATH");
    cmd->add_flag("--no-store", f.no_store, "do not save the run in the run store");
}

void add_repeat_flag(CLI::App* cmd, RunFlags& f) {
    cmd->add_option("--repeat", f.repeat,
                    "run each configuration N times (1 to " + std::to_string(kMaxRepeats) +
                        "), alternating configurations, and report median, min-max and 95% bootstrap intervals")
        ->type_name("N");
}

void add_te_impl_flag(CLI::App* cmd, RunFlags& f, const std::string& which_runs) {
    cmd->add_option("--te-impl", f.te_impl,
                    "auto | fused | reference: the code that runs the te backend's modules" + which_runs +
                        ". auto: the fused kernels on a CUDA GPU of compute capability 8.0 or newer, else the reference; "
                        "fused: the fused path on any device (on the CPU the host kernels, FP8 GEMMs emulated); "
                        "reference: LibTorch ops in float32 math (default: $TEWB_TE_IMPL, else auto)")
        ->type_name("NAME");
}

void add_fp8_flags(CLI::App* cmd, RunFlags& f) {
    const Fp8Recipe d = Fp8Recipe::seed_defaults();
    cmd->add_option("--recipe", f.recipe,
                    "FP8 scaling: delayed | current | block (1x128 / 128x128 block scales, E4M3 unless --fp8-format; "
                    "real block-scaled GEMMs on Hopper, emulated elsewhere) (default delayed)")
        ->type_name("NAME");
    cmd->add_option("--block-scales", f.block_scales, "with --recipe block: pow2 (default) | exact float32 scales")
        ->type_name("pow2|exact");
    cmd->add_option("--fp8-format", f.fp8_format, "hybrid (E4M3 forward, E5M2 gradients) | e4m3 (default hybrid)")
        ->type_name("NAME");
    cmd->add_option("--amax-history-len", f.amax_history_len,
                    "amax history per FP8 tensor, 1 to 65536 (default " + std::to_string(d.amax_history_len) +
                        "; Transformer Engine's library default is 1024)")
        ->type_name("N");
    cmd->add_option("--amax-algo", f.amax_algo, "max (over the history) | most_recent (default max)")->type_name("NAME");
    cmd->add_option("--margin", f.margin, "scale = fp8_max / 2^margin / amax; 0 to 64 (default 0)")->type_name("N");
    cmd->add_option("--calibrate-first-step", f.calibrate_first_step,
                    "with --recipe delayed: on: until the first scale update each cast takes the scale its own amax gives; "
                    "off: scale 1, as Transformer Engine (default on)")
        ->type_name("on|off");
    cmd->add_flag("--inspect-fp8", f.inspect_fp8,
                  "also record the fraction of saturated and underflowed elements per cast (slower)");
}

}  // namespace

namespace {

// Where CLI11 leaves each run setting's text in RunFlags; the settings table (core/config/RunSettings) says
// how it is read. te-impl is read apart: its environment form is a default.
std::string RunFlags::*text_member(std::string_view id) {
    static const std::pair<std::string_view, std::string RunFlags::*> kMembers[] = {
        {"device", &RunFlags::device},
        {"backend", &RunFlags::backend},
        {"precision", &RunFlags::precision},
        {"arch", &RunFlags::arch},
        {"kv-heads", &RunFlags::kv_heads},
        {"ffn", &RunFlags::ffn},
        {"rope-base", &RunFlags::rope_base},
        {"data", &RunFlags::data},
        {"data-format", &RunFlags::data_format},
        {"val-fraction", &RunFlags::val_fraction},
        {"eval-every", &RunFlags::eval_every},
        {"layers", &RunFlags::layers},
        {"hidden", &RunFlags::hidden},
        {"heads", &RunFlags::heads},
        {"seq", &RunFlags::seq},
        {"vocab", &RunFlags::vocab},
        {"batch", &RunFlags::batch},
        {"warmup", &RunFlags::warmup},
        {"iters", &RunFlags::iters},
        {"lr", &RunFlags::lr},
        {"seed", &RunFlags::seed},
        {"cuda-graph", &RunFlags::cuda_graph},
        {"te-impl", &RunFlags::te_impl},
        {"recipe", &RunFlags::recipe},
        {"fp8-format", &RunFlags::fp8_format},
        {"amax-history-len", &RunFlags::amax_history_len},
        {"amax-algo", &RunFlags::amax_algo},
        {"margin", &RunFlags::margin},
        {"block-scales", &RunFlags::block_scales},
        {"calibrate-first-step", &RunFlags::calibrate_first_step},
        {"nproc", &RunFlags::nproc},
        {"dist-backend", &RunFlags::dist_backend},
        {"bucket-mb", &RunFlags::bucket_mb},
        {"amax-reduction", &RunFlags::amax_reduction},
        {"dist-timeout", &RunFlags::dist_timeout},
        {"name", &RunFlags::name},
    };
    for (const auto& [name, member] : kMembers) {
        if (name == id) return member;
    }
    return nullptr;
}

}  // namespace

namespace {

// llama's own settings given for a gpt, and a token file's settings given without one, are refused even with their
// default values: a flag that would be ignored is a mistake.
void check_flags_apply(const RunFlags& f, const RunConfig& c) {
    for (const RunSetting& s : run_settings()) {
        if (!flag_given(f, s)) continue;
        if (s.use == SettingUse::Llama && c.model.arch != Arch::Llama) throw ConfigError(llama_only_problem(s.id, c));
        if (s.use == SettingUse::DataFile && s.id != "data" && !c.data.from_file()) throw ConfigError(needs_data_problem(s.id, c));
    }
}

}  // namespace

bool flag_given(const RunFlags& f, const RunSetting& s) {
    if (s.kind == SettingKind::Presence) return s.id == "inspect-fp8" && f.inspect_fp8;
    const auto member = text_member(s.id);
    return member != nullptr && !(f.*member).empty();
}

RunConfig config_from_flags(const RunFlags& f) {
    RunConfig c = make_preset(f.preset.empty() ? Preset::Seed : parse_name<Preset>("--preset", f.preset));
    const bool dist_flags = !f.dist_backend.empty() || !f.bucket_mb.empty() || !f.amax_reduction.empty() ||
                            !f.dist_timeout.empty() || !f.master_port.empty() || f.no_scaling_baseline;
    if (dist_flags && f.nproc.empty() && std::getenv("WORLD_SIZE") == nullptr) {
        throw ConfigError("--dist-backend/--bucket-mb/--amax-reduction/--dist-timeout/--master-port/--no-scaling-baseline go "
                          "with --nproc N (or a launcher's WORLD_SIZE)");
    }
    for (const RunSetting& s : run_settings()) {
        if (s.id == "te-impl" || !flag_given(f, s)) continue;
        const auto member = text_member(s.id);
        set_setting_from_text(s, c, member != nullptr ? std::string_view(f.*member) : std::string_view());
    }
    check_flags_apply(f, c);
    if (!f.data.empty()) {
        // The record keeps the path: absolute, so "run again" from the GUI or another directory finds the same file.
        std::error_code error;
        const std::filesystem::path absolute = std::filesystem::absolute(f.data, error);
        if (!error) c.data.path = absolute.lexically_normal().string();
    }
    if (f.fp8_format.empty() && c.fp8.scaling == ScalingKind::Block) {
        c.fp8.format = RecipeFormat::E4M3;  // Float8BlockScaling's default: E4M3 everywhere
    }
    if (!f.block_scales.empty() && c.fp8.scaling != ScalingKind::Block) {
        throw ConfigError("--block-scales goes with --recipe block");
    }
    if (!f.calibrate_first_step.empty() && c.fp8.scaling != ScalingKind::Delayed) {
        throw ConfigError("--calibrate-first-step goes with --recipe delayed (current and block scaling have no first-step "
                          "scale to calibrate)");
    }
    // TEWB_TE_IMPL is a default for te runs and never refuses a torch run, not even a value it does not know (a
    // torch run does not read it); an explicit --te-impl on one is refused by validation, so the GUI and the CLI
    // say the same.
    if (c.backend == Backend::Te || !f.te_impl.empty()) c.te_impl = te_impl_from_flags(f);
    if (!f.nproc.empty() && (c.dist.nproc < 1 || c.dist.nproc > 64)) {
        throw ConfigError("--nproc " + f.nproc + ": out of range; allowed: 1 to 64");
    }
    return c;
}

TeImpl te_impl_from_flags(const RunFlags& f) {
    return f.te_impl.empty() ? te_impl_from_environment() : parse_name<TeImpl>("--te-impl", f.te_impl);
}

int repeat_from_flags(const RunFlags& f) {
    if (f.repeat.empty()) return 1;
    const int n = parse_int("--repeat", f.repeat);
    if (n < 1 || n > kMaxRepeats) {
        throw ConfigError("--repeat " + f.repeat + ": out of range; allowed: 1 to " + std::to_string(kMaxRepeats));
    }
    return n;
}

SweepSpec sweep_from_flags(const RunFlags& f, const std::string& precisions) {
    RunFlags shared = f;  // the lists are the sweep's; everything else is a run flag
    shared.hidden.clear();
    shared.batch.clear();
    shared.seq.clear();
    shared.backend.clear();
    SweepSpec spec;
    spec.base = config_from_flags(shared);
    if (f.warmup.empty()) spec.base.warmup = 3;
    if (f.iters.empty()) spec.base.iters = 10;
    if (!f.hidden.empty()) spec.hidden = parse_int_list("--hidden", f.hidden);
    if (!f.batch.empty()) spec.batch = parse_int_list("--batch", f.batch);
    if (!f.seq.empty()) spec.seq = parse_int_list("--seq", f.seq);
    if (!precisions.empty()) spec.precisions = parse_precision_list("--precisions", precisions);
    if (!f.backend.empty()) spec.backend = parse_name<Backend>("--backend", f.backend);
    if (spec.backend == Backend::Te || !f.te_impl.empty()) spec.base.te_impl = te_impl_from_flags(f);
    spec.repeats = repeat_from_flags(f);
    return spec;
}

void check_fp8_flags_apply(const RunFlags& f, const RunConfig& c) {
    if (f.fp8_flags_given() && c.precision != Precision::Fp8) {
        throw ConfigError("--recipe/--fp8-format/--amax-history-len/--amax-algo/--margin/--calibrate-first-step: FP8 settings need --precision fp8 "
                          "(with --backend te); this run is " + std::string(to_string(c.precision)));
    }
}

namespace {

void define_training_commands(CLI::App& app, Commands& c) {
    c.run = app.add_subcommand("run", "train one configuration: warm-up, then timed steps");
    add_model_flags(c.run, c.run_flags);
    c.run->add_option("--backend", c.run_flags.backend, "torch | te (default torch)");
    c.run->add_option("--precision", c.run_flags.precision,
                      "auto | fp32 | bf16 | fp8 (default auto: bf16 on a GPU, fp32 on the CPU; fp8 needs --backend te)");
    c.run->add_option("--name", c.run_flags.name, "label of the run in tables, charts and history");
    add_te_impl_flag(c.run, c.run_flags, " (with --backend te)");
    add_fp8_flags(c.run, c.run_flags);
    RunFlags& r = c.run_flags;
    c.run->add_option("--nproc", r.nproc,
                      "data-parallel job of N processes on this machine (one per GPU, or N CPU processes with --device cpu); "
                      "each trains --batch sequences per step (1: the machinery alone). Under torchrun or a scheduler "
                      "(RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT set) this process is one rank")
        ->type_name("N");
    c.run->add_option("--dist-backend", r.dist_backend, "auto | gloo | nccl (default auto: nccl on GPUs, gloo on CPUs)")
        ->type_name("NAME");
    c.run->add_option("--bucket-mb", r.bucket_mb, "gradient all-reduce bucket size in MB (default 25)")->type_name("X");
    c.run->add_option("--amax-reduction", r.amax_reduction,
                      "on | off: FP8 amaxes reduced (max) over ranks before each scale update (default on)")
        ->type_name("on|off");
    c.run->add_option("--dist-timeout", r.dist_timeout,
                      "seconds a rank may be absent or silent before the job stops (default 120)")
        ->type_name("S");
    c.run->add_option("--master-port", r.master_port, "--nproc: the rendezvous port on 127.0.0.1 (default: a free one)")
        ->type_name("PORT");
    c.run->add_flag("--ledger", r.ledger,
                    "print the launch ledger of one eager step: one layer's ops (launches, bytes read and written, per "
                    "module), the rows outside the layers, and the totals per layer and per step");
    c.run->add_option("--profile", r.profile_path,
                      "trace one more step after the timed ones (same kind: a graph replay when they replay one) with "
                      "LibTorch's Kineto profiler to this file (Chrome trace JSON: Perfetto, chrome://tracing; CUDA "
                      "kernels through CUPTI on a GPU, operators on the CPU), and print its top kernels; the step is "
                      "not in the statistics")
        ->type_name("PATH");
    c.run->add_option("--gemm-journal", r.gemm_journal_path,
                      "write every distinct GEMM the te backend's fused path issued (types, shape, epilogue and the "
                      "alignment of every pointer it passed, scales included) to this JSON file, for tewb-gemm-replay "
                      "(on the CPU add --te-impl fused: the fused path over the host kernels)")
        ->type_name("PATH");
    c.run->add_flag("--no-scaling-baseline", r.no_scaling_baseline,
                    "--nproc: skip the 1-process run of the same per-rank batch that the scaling efficiency is measured against");

    c.compare = app.add_subcommand("compare", "run the baseline and every configuration this device supports, back to back");
    add_model_flags(c.compare, c.compare_flags);
    add_fp8_flags(c.compare, c.compare_flags);
    add_te_impl_flag(c.compare, c.compare_flags, " in the te rows");
    c.compare->add_option("--summary-csv", c.compare_summary_csv, "write the comparison table as CSV to this file")
        ->type_name("PATH");
    add_repeat_flag(c.run, c.run_flags);
    add_repeat_flag(c.compare, c.compare_flags);

    c.sweep = app.add_subcommand("sweep", "where does a precision pay? train a grid of sizes briefly, baseline and each "
                                          "precision, and state the break-even size");
    RunFlags& w = c.sweep_flags;
    c.sweep->add_option("--hidden", w.hidden, "hidden sizes, multiples of 64 (heads = hidden / 64), e.g. 256,512,768,1024")
        ->type_name("LIST");
    c.sweep->add_option("--batch", w.batch, "batch sizes (default: the preset's)")->type_name("LIST");
    c.sweep->add_option("--seq", w.seq, "sequence lengths (default: the preset's)")->type_name("LIST");
    c.sweep->add_option("--precisions", c.sweep_precisions, "precisions of --backend against the baseline (default bf16,fp8)")
        ->type_name("LIST");
    c.sweep->add_option("--backend", w.backend, "te | torch (default te)")->type_name("NAME");
    c.sweep->add_option("--repeat", w.repeat,
                        "run each configuration N times at each size (1 to " + std::to_string(kMaxRepeats) +
                            "), alternating within the size; a size pays only where the speedup's 95% interval over the "
                            "repeats is above 1 and no run was noisy")
        ->type_name("N");
    c.sweep->add_option("--preset", w.preset, "the sizes not swept: " + presets_help() + " (default seed)")->type_name("NAME");
    c.sweep->add_option("--device", w.device, "auto | cpu | cuda (default auto)")->type_name("NAME");
    c.sweep->add_option("--layers", w.layers, "transformer blocks (default 12)")->type_name("N");
    c.sweep->add_option("--vocab", w.vocab, "vocabulary size (default 4096)")->type_name("N");
    add_arch_and_data_flags(c.sweep, w);
    c.sweep->add_option("--warmup", w.warmup, "warm-up steps per run (default 3)")->type_name("N");
    c.sweep->add_option("--iters", w.iters, "timed steps per run (default 10)")->type_name("N");
    c.sweep->add_option("--seed", w.seed, "seed of weights and data (default 1234)")->type_name("N");
    c.sweep->add_option("--cuda-graph", w.cuda_graph, "on | off (default on)")->type_name("on|off");
    add_te_impl_flag(c.sweep, w, " in the te runs (with --backend te)");
    c.sweep->add_option("--csv", w.csv_path, "write the sweep table (size, precision, ms, speedup) as CSV")->type_name("PATH");
    c.sweep->add_option("--json", w.json_path, "write the sweep's run records as JSON ('-' for stdout)")->type_name("PATH");
    c.sweep->add_flag("--no-store", w.no_store, "do not save the runs in the run store");
    add_fp8_flags(c.sweep, w);
}

void define_recipe_command(CLI::App& app, Commands& c) {
    c.recipe = app.add_subcommand("recipe",
                                  "replay the FP8 scale-update rule on a sequence of amaxes: the scale each step would use");
    c.recipe->add_option("--recipe", c.replay_recipe, "delayed | current | block (explained: no history) (default delayed)")
        ->type_name("NAME");
    c.recipe->add_option("--dtype", c.replay_dtype,
                         "the replayed cast's FP8 type: e4m3 (max 448) | e5m2 (max 57344) (default e4m3)")
        ->type_name("NAME");
    c.recipe->add_option("--amax-history-len", c.replay_history_len, "amax history length, 1 to 65536 (default 16)")
        ->type_name("L");
    c.recipe->add_option("--amax-algo", c.replay_algo, "max | most_recent (default max)")->type_name("NAME");
    // The names this command had before it took run's: accepted, not listed.
    c.recipe->add_option("--history-len", c.replay_history_len_alias)->group("");
    c.recipe->add_option("--algo", c.replay_algo_alias)->group("");
    c.recipe->add_option("--margin", c.replay_margin, "0 to 64 (default 0)")->type_name("M");
    c.recipe->add_option("--calibrate-first-step", c.replay_calibrate,
                         "delayed: step 1 takes the scale its own amax gives instead of 1 (te-bench run's default); off: "
                         "Transformer Engine's rule (default off)")
        ->type_name("on|off");
    c.recipe->add_option("--amax", c.replay_amax, "comma-separated amax per step, e.g. 3.5,0,1e-40,inf,nan")
        ->type_name("LIST")
        ->required();
    c.recipe->add_flag("--json", c.replay_json, "print the replay as JSON (docs/fp8.md)");
}

void define_history_commands(CLI::App& app, Commands& c) {
    c.history = app.add_subcommand("history", "runs saved in the run store");
    c.history->require_subcommand(1);
    c.history_list = c.history->add_subcommand("list", "list saved runs, newest first");
    c.history_list->add_flag("--json", c.list_json, "print as JSON");
    c.history_show = c.history->add_subcommand("show", "show one saved run");
    c.history_show->add_option("ID", c.show_id, "run number from `history list`")->required();
    c.history_show->add_flag("--json", c.show_json, "print the whole run record as JSON");
    c.history_delete = c.history->add_subcommand("delete", "delete saved runs");
    c.history_delete->add_option("ID", c.delete_ids, "run numbers from `history list`")->required();
    c.history_export = c.history->add_subcommand("export", "write saved runs as JSON and CSV");
    c.history_export->add_option("ID", c.export_ids, "run numbers from `history list`")->required();
    c.history_export->add_option("--json", c.export_json, "JSON file: one record, or an array of records ('-' for stdout)")
        ->type_name("PATH");
    c.history_export->add_option("--csv", c.export_csv, "per-step CSV (long format)")->type_name("PATH");
    c.history_export->add_option("--summary-csv", c.export_summary_csv, "summary CSV, the first ID as baseline")
        ->type_name("PATH");
    c.history_export->add_option("--fp8-csv", c.export_fp8_csv, "FP8 statistics CSV (FP8 runs)")->type_name("PATH");
    c.history_export->add_option("--tensorboard", c.export_tensorboard,
                                 "TensorBoard event files, a folder per run (made if missing; `tensorboard --logdir DIR`)")
        ->type_name("DIR");
    c.history_diff = c.history->add_subcommand("diff", "the settings two saved runs were given differently");
    c.history_diff->add_option("ID", c.diff_ids, "two run numbers from `history list`")->required()->expected(2);
    c.history_import = c.history->add_subcommand("import", "add run records (JSON from te-bench run/export) to the store");
    c.history_import->add_option("FILE", c.import_paths, "JSON file with one record or an array of records")->required();
}

}  // namespace

void define_commands(CLI::App& app, Commands& c) {
    app.require_subcommand(0, 1);  // a missing or unknown command gets our own message (parse_arguments)
    app.set_version_flag("--version", version_text("te-bench"), "print the version and git commit, then exit");
    app.add_option("--store", c.store_path,
                   "run store database (default: $TEWB_DATA_DIR, $XDG_DATA_HOME or ~/.local/share/te-workbench)");
    c.info = app.add_subcommand("info", "what this machine can run: GPU, compute capability, mode and versions");
    c.info->add_flag("--json", c.info_json, "print as JSON");
    define_training_commands(app, c);
    define_recipe_command(app, c);
    c.selftest = app.add_subcommand(
        "selftest", "check every fused kernel against its reference on this GPU (exit 0 all pass, 1 a failure, 77 no GPU)");
    c.selftest->add_flag("--json", c.selftest_json, "print the report as JSON");
    define_history_commands(app, c);
    c.export_runs = app.add_subcommand("export", "write saved runs for other tools: TensorBoard event files");
    c.export_runs->add_option("ID", c.export_runs_ids, "run numbers from `history list` (default: every saved run)");
    c.export_runs->add_option("--tensorboard", c.export_runs_tensorboard,
                              "folder for TensorBoard's event files, a folder per run (made if missing); then "
                              "`tensorboard --logdir DIR`")
        ->type_name("DIR")
        ->required();
}

namespace {

// CLI11's message on one line, with long values cut; its "--lr: At Most 1 required but received 2" in our words.
std::string one_line(const std::exception& e) {
    std::string message = e.what();
    std::replace(message.begin(), message.end(), '\n', ' ');
    const std::string at_most = ": At Most 1 required but received ";
    if (const std::size_t at = message.find(at_most); at != std::string::npos && dynamic_cast<const CLI::ArgumentMismatch*>(&e)) {
        message = message.substr(0, at) + ": given " + message.substr(at + at_most.size()) +
                  " times; allowed: once (which of them was meant is not for te-bench to guess)";
    }
    return with_long_values_cut(message);
}

// An option given with an empty value (`--lr ""`, `--json ""`) is a mistake, never "the default": the
// first such option of the command line, over the program and every subcommand that was used.
// Returns "<flag>: empty value; ... (see <the command it belongs to> --help)".
std::optional<std::string> first_empty_value(const CLI::App& app, const std::string& command = "te-bench") {
    for (const CLI::Option* option : app.get_options()) {
        if (option->get_type_size_max() == 0 || option->count() == 0) continue;  // a flag, or not given
        for (const std::string& value : option->results()) {
            if (value.empty()) {
                return option->get_name() + ": empty value; give a value or leave the option out (see " + command +
                       " --help)";
            }
        }
    }
    for (const CLI::App* sub : app.get_subcommands()) {
        if (auto problem = first_empty_value(*sub, command + " " + sub->get_name())) return problem;
    }
    return std::nullopt;
}

}  // namespace

// CLI11's parse with our messages; an exit status when the arguments end the program (help, version,
// a bad argument), nothing when a command is to run.
std::optional<int> parse_arguments(CLI::App& app, const Commands& c, int argc, char** argv) {
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ExtrasError& e) {
        if (app.get_subcommands().empty() && !app.remaining().empty()) {
            std::fprintf(stderr, "te-bench: unknown command '%s'; allowed: %s (see te-bench --help)\n",
                         with_long_values_cut(app.remaining().front()).c_str(), kCommands);
            return kExitUsage;
        }
        std::fprintf(stderr, "te-bench: %s (see te-bench --help)\n", one_line(e).c_str());
        return kExitUsage;
    } catch (const CLI::ParseError& e) {
        if (c.history->parsed() && c.history->get_subcommands().empty()) {  // `history` is the only command with subcommands
            const std::string problem = c.history->remaining().empty()
                                            ? std::string("a subcommand is required")
                                            : "unknown subcommand '" + with_long_values_cut(c.history->remaining().front()) + "'";
            std::fprintf(stderr, "te-bench history: %s; allowed: list|show|diff|delete|export|import\n", problem.c_str());
            return kExitUsage;
        }
        std::fprintf(stderr, "te-bench: %s (see te-bench --help)\n", one_line(e).c_str());
        return kExitUsage;
    }
    if (app.get_subcommands().empty()) {
        std::fprintf(stderr, "te-bench: a command is required; allowed: %s (see te-bench --help)\n", kCommands);
        return kExitUsage;
    }
    if (const std::optional<std::string> problem = first_empty_value(app)) {
        std::fprintf(stderr, "te-bench: %s\n", problem->c_str());
        return kExitUsage;
    }
    return std::nullopt;
}

}  // namespace tewb::cli

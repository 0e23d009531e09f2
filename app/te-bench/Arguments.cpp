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

// Every run setting's flag that `command` takes, read off the settings table (core/config/RunSettings): its help
// (with the default from RunConfig{}), its value's name, and where CLI11 leaves its text.
void add_setting_flags(CLI::App* cmd, RunFlags& f, unsigned command) {
    for (const RunSetting& s : run_settings()) {
        if ((s.commands & command) == 0) continue;
        const std::string id(s.id);
        if (s.kind == SettingKind::Presence) {
            cmd->add_flag(std::string(s.flag), f.switches[id], setting_help(s));
        } else {
            cmd->add_option(std::string(s.flag), f.settings[id], setting_help(s))->type_name(std::string(s.value_name));
        }
    }
}

void add_output_flags(CLI::App* cmd, RunFlags& f) {
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
    cmd->add_option("--te-impl", f.settings["te-impl"],
                    "auto | fused | reference: the code that runs the te backend's modules" + which_runs +
                        ". auto: the fused kernels on a CUDA GPU of compute capability 8.0 or newer, else the reference; "
                        "fused: the fused path on any device (on the CPU the host kernels, FP8 GEMMs emulated); "
                        "reference: LibTorch ops in float32 math (default: $TEWB_TE_IMPL, else auto)")
        ->type_name("NAME");
}

}  // namespace

namespace {

// A flag that would be ignored is a mistake, even with its default value (core's given_setting_problem says which).
void check_flags_apply(const RunFlags& f, const RunConfig& c) {
    for (const RunSetting& s : run_settings()) {
        if (!f.given(s.id)) continue;
        if (const std::optional<std::string> problem = given_setting_problem(s, c)) throw ConfigError(*problem);
    }
}

}  // namespace

std::string RunFlags::text(std::string_view id) const {
    const auto it = settings.find(id);
    return it == settings.end() ? std::string() : it->second;
}

bool RunFlags::given(std::string_view id) const {
    if (const auto it = switches.find(id); it != switches.end()) return it->second;
    return !text(id).empty();
}

bool RunFlags::fp8_flags_given() const {
    for (const RunSetting& s : run_settings()) {
        if (fp8_recipe_setting(s) && given(s.id)) return true;
    }
    return false;
}

namespace {

// "--dist-backend/--bucket-mb/...": the job's own flags, which mean nothing without --nproc.
std::string job_flags() {
    std::string flags;
    for (const RunSetting& s : run_settings()) {
        if (s.section == SettingSection::Dist && s.id != "nproc") flags += std::string(s.flag) + "/";
    }
    return flags + "--master-port/--no-scaling-baseline";
}

bool job_flags_given(const RunFlags& f) {
    for (const RunSetting& s : run_settings()) {
        if (s.section == SettingSection::Dist && s.id != "nproc" && f.given(s.id)) return true;
    }
    return !f.master_port.empty() || f.no_scaling_baseline;
}

}  // namespace

RunConfig config_from_flags(const RunFlags& f) {
    RunConfig c = make_preset(f.preset.empty() ? Preset::Seed : parse_name<Preset>("--preset", f.preset));
    if (job_flags_given(f) && !f.given("nproc") && std::getenv("WORLD_SIZE") == nullptr) {
        throw ConfigError(job_flags() + " go with --nproc N (or a launcher's WORLD_SIZE)");
    }
    for (const RunSetting& s : run_settings()) {
        if (s.id == "te-impl" || !f.given(s.id)) continue;
        set_setting_from_text(s, c, f.text(s.id));
    }
    check_flags_apply(f, c);
    if (f.given("data")) {
        // The record keeps the path: absolute, so "run again" from the GUI or another directory finds the same file.
        std::error_code error;
        const std::filesystem::path absolute = std::filesystem::absolute(f.text("data"), error);
        if (!error) c.data.path = absolute.lexically_normal().string();
    }
    if (!f.given("fp8-format")) c.fp8.format = default_recipe_format(c.fp8.scaling);
    // TEWB_TE_IMPL is a default for te runs and never refuses a torch run, not even a value it does not know (a
    // torch run does not read it); an explicit --te-impl on one is refused by validation, so the GUI and the CLI
    // say the same.
    if (c.backend == Backend::Te || f.given("te-impl")) c.te_impl = te_impl_from_flags(f);
    if (f.given("nproc") && (c.dist.nproc < 1 || c.dist.nproc > kMaxProcesses)) {
        throw ConfigError("--nproc " + f.text("nproc") + ": out of range; allowed: 1 to " + std::to_string(kMaxProcesses));
    }
    return c;
}

TeImpl te_impl_from_flags(const RunFlags& f) {
    return f.given("te-impl") ? parse_name<TeImpl>("--te-impl", f.text("te-impl")) : te_impl_from_environment();
}

int repeat_from_flags(const RunFlags& f) {
    if (f.repeat.empty()) return 1;
    const int n = parse_int("--repeat", f.repeat);
    if (n < 1 || n > kMaxRepeats) {
        throw ConfigError("--repeat " + f.repeat + ": out of range; allowed: 1 to " + std::to_string(kMaxRepeats));
    }
    return n;
}

SweepSpec sweep_from_flags(const RunFlags& f, const std::string& precisions, const std::string& baseline) {
    RunFlags shared = f;  // the lists are the sweep's; everything else is a run flag
    for (const char* id : {"hidden", "batch", "seq", "backend"}) shared.settings.erase(id);
    SweepSpec spec;
    spec.base = config_from_flags(shared);
    if (!f.given("warmup")) spec.base.warmup = 3;
    if (!f.given("iters")) spec.base.iters = 10;
    if (f.given("hidden")) spec.hidden = parse_int_list("--hidden", f.text("hidden"));
    if (f.given("batch")) spec.batch = parse_int_list("--batch", f.text("batch"));
    if (f.given("seq")) spec.seq = parse_int_list("--seq", f.text("seq"));
    if (!precisions.empty()) spec.precisions = parse_precision_list("--precisions", precisions);
    if (f.given("backend")) spec.backend = parse_name<Backend>("--backend", f.text("backend"));
    if (!baseline.empty()) spec.baseline_backend = parse_name<Backend>("--baseline", baseline);
    if (spec.backend == Backend::Te || spec.baseline_backend == Backend::Te || f.given("te-impl")) {
        spec.base.te_impl = te_impl_from_flags(f);
    }
    spec.repeats = repeat_from_flags(f);
    return spec;
}

void check_fp8_flags_apply(const RunFlags& f, const RunConfig& c) {
    if (f.fp8_flags_given() && c.precision != Precision::Fp8) {
        throw ConfigError(fp8_recipe_flags() + ": FP8 settings need --precision fp8 (with --backend te); this run is " +
                          std::string(to_string(c.precision)));
    }
}

namespace {

void define_run_command(CLI::App& app, Commands& c) {
    c.run = app.add_subcommand("run", "train one configuration: warm-up, then timed steps");
    RunFlags& r = c.run_flags;
    c.run->add_option("--preset", r.preset, presets_help())->type_name("NAME");
    add_setting_flags(c.run, r, kRunCommand);
    add_te_impl_flag(c.run, r, " (with --backend te)");
    add_output_flags(c.run, r);
    add_repeat_flag(c.run, r);
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
}

void define_compare_command(CLI::App& app, Commands& c) {
    c.compare = app.add_subcommand("compare", "run the baseline and every configuration this device supports, back to back");
    RunFlags& f = c.compare_flags;
    c.compare->add_option("--preset", f.preset, presets_help())->type_name("NAME");
    add_setting_flags(c.compare, f, kCompareCommand);
    add_te_impl_flag(c.compare, f, " in the te rows");
    add_output_flags(c.compare, f);
    c.compare->add_option("--summary-csv", c.compare_summary_csv, "write the comparison table as CSV to this file")
        ->type_name("PATH");
    add_repeat_flag(c.compare, f);
}

// The sweep's grid (hidden, batch and seq as lists), its backend and its shorter runs are its own flags; every other
// run setting is the settings table's, as on run and compare.
void define_sweep_command(CLI::App& app, Commands& c) {
    c.sweep = app.add_subcommand("sweep", "where does a precision pay? train a grid of sizes briefly, baseline and each "
                                          "precision, and state the break-even size");
    RunFlags& w = c.sweep_flags;
    c.sweep->add_option("--hidden", w.settings["hidden"],
                        "hidden sizes, multiples of 64 (heads = hidden / 64), e.g. 256,512,768,1024")
        ->type_name("LIST");
    c.sweep->add_option("--batch", w.settings["batch"], "batch sizes (default: the preset's)")->type_name("LIST");
    c.sweep->add_option("--seq", w.settings["seq"], "sequence lengths (default: the preset's)")->type_name("LIST");
    c.sweep->add_option("--precisions", c.sweep_precisions, "precisions of --backend against the baseline (default bf16,fp8)")
        ->type_name("LIST");
    c.sweep->add_option("--backend", w.settings["backend"], "te | torch (default te)")->type_name("NAME");
    c.sweep->add_option("--baseline", c.sweep_baseline,
                        "the baseline's backend, at BF16 on a GPU (FP32 on the CPU): torch (default; what te gains over "
                        "plain LibTorch) or te (with --precisions fp8: where FP8 pays over te's own BF16)")
        ->type_name("NAME");
    c.sweep->add_option("--repeat", w.repeat,
                        "run each configuration N times at each size (1 to " + std::to_string(kMaxRepeats) +
                            "), alternating within the size; a size pays only where the speedup's 95% interval over the "
                            "repeats is above 1 and no run was noisy")
        ->type_name("N");
    c.sweep->add_option("--preset", w.preset, "the sizes not swept: " + presets_help() + " (default seed)")->type_name("NAME");
    c.sweep->add_option("--warmup", w.settings["warmup"], "warm-up steps per run (default 3)")->type_name("N");
    c.sweep->add_option("--iters", w.settings["iters"], "timed steps per run (default 10)")->type_name("N");
    add_setting_flags(c.sweep, w, kSweepCommand);
    add_te_impl_flag(c.sweep, w, " in the te runs (with --backend te)");
    c.sweep->add_option("--csv", w.csv_path, "write the sweep table (size, precision, ms, speedup) as CSV")->type_name("PATH");
    c.sweep->add_option("--json", w.json_path, "write the sweep's run records as JSON ('-' for stdout)")->type_name("PATH");
    c.sweep->add_flag("--no-store", w.no_store, "do not save the runs in the run store");
}

void define_training_commands(CLI::App& app, Commands& c) {
    define_run_command(app, c);
    define_compare_command(app, c);
    define_sweep_command(app, c);
}

void define_recipe_command(CLI::App& app, Commands& c) {
    c.recipe = app.add_subcommand("recipe",
                                  "replay the FP8 scale-update rule on a sequence of amaxes: the scale each step would use");
    c.recipe->add_option("--recipe", c.replay_recipe, "delayed | current | block (explained: no history) | mxfp8 | nvfp4 (no history: each amax's block or tensor scale) (default delayed)")
        ->type_name("NAME");
    c.recipe->add_option("--dtype", c.replay_dtype,
                         "the replayed cast's FP8 type: e4m3 (max 448) | e5m2 (max 57344) (default e4m3)")
        ->type_name("NAME");
    c.recipe->add_option("--amax-history-len", c.replay_history_len,
                         "amax history length, 1 to " + std::to_string(Fp8Recipe::kMaxHistoryLen) + " (default " +
                             std::to_string(Fp8Recipe::seed_defaults().amax_history_len) + ")")
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

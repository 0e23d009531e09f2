#pragma once
// te-bench's command line: every command and flag (CLI11), parsed into plain text settings that core
// converts with messages naming the flag. Kept apart from main.cpp so the fuzz target for argument
// parsing (fuzz/) runs exactly this code without LibTorch.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/config/RunConfig.h"
#include "core/config/RunSettings.h"
#include "core/config/SweepPlan.h"

namespace tewb::cli {

constexpr int kExitUsage = 2;
constexpr const char* kCommands = "info|run|compare|sweep|recipe|selftest|history|export";

// Run settings as text, so every number is converted by core with a message naming the flag.
struct RunFlags {
    // Every run setting's flag (core/config/RunSettings), by the setting's id ("hidden", "amax-history-len"): the
    // text given, empty when not given; a flag without a value (--inspect-fp8) in `switches`.
    std::map<std::string, std::string, std::less<>> settings;
    std::map<std::string, bool, std::less<>> switches;
    // The flags that are not run settings: what to start from, where to write, how often to run.
    std::string preset, repeat;
    std::string json_path, csv_path, fp8_csv_path;
    bool no_store = false;
    // Data parallelism (`run` only).
    std::string master_port;
    bool no_scaling_baseline = false;
    bool ledger = false;  // `run --ledger`: print the launch ledger (one layer's rows and the totals)
    std::string profile_path;  // `run --profile`: trace one more step after the timed ones to this file
    std::string gemm_journal_path;  // `run --gemm-journal`: every distinct GEMM of the fused path, to this file

    // The text given for the setting `id`; empty when not given.
    std::string text(std::string_view id) const;
    bool given(std::string_view id) const;
    // Whether any flag of the FP8 recipe was given (fp8_recipe_flags(): --recipe, --fp8-format, ...).
    bool fp8_flags_given() const;
};

// Every command's flags, filled by CLI11, and the subcommands to tell which one was given.
struct Commands {
    std::string store_path;
    CLI::App* history = nullptr;

    CLI::App* info = nullptr;
    bool info_json = false;

    CLI::App* selftest = nullptr;
    bool selftest_json = false;

    CLI::App* run = nullptr;
    RunFlags run_flags;

    CLI::App* compare = nullptr;
    RunFlags compare_flags;
    std::string compare_summary_csv;

    CLI::App* sweep = nullptr;
    RunFlags sweep_flags;  // hidden, batch and seq are lists here
    std::string sweep_precisions;
    std::string sweep_baseline;  // --baseline torch | te; empty: not given (torch)

    CLI::App* recipe = nullptr;
    std::string replay_recipe, replay_dtype, replay_history_len, replay_algo, replay_margin, replay_amax,
        replay_calibrate;
    std::string replay_history_len_alias, replay_algo_alias;  // --history-len, --algo: run's names are the flags
    bool replay_json = false;

    CLI::App* history_list = nullptr;
    bool list_json = false;
    CLI::App* history_show = nullptr;
    std::string show_id;
    bool show_json = false;
    CLI::App* history_delete = nullptr;
    std::vector<std::string> delete_ids;
    CLI::App* history_export = nullptr;
    std::vector<std::string> export_ids;
    std::string export_json, export_csv, export_summary_csv, export_fp8_csv, export_tensorboard;
    CLI::App* history_diff = nullptr;
    std::vector<std::string> diff_ids;
    CLI::App* history_import = nullptr;
    std::vector<std::string> import_paths;

    // `te-bench export --tensorboard DIR [ID...]`: saved runs (every one when no ID is given) for other tools.
    CLI::App* export_runs = nullptr;
    std::vector<std::string> export_runs_ids;
    std::string export_runs_tensorboard;
};

void define_commands(CLI::App& app, Commands& c);
// CLI11's parse with te-bench's messages; an exit status when the arguments end the program (help,
// version, a bad argument: 2), nothing when a command is to run.
std::optional<int> parse_arguments(CLI::App& app, const Commands& c, int argc, char** argv);
// The run configuration the flags describe (a preset plus overrides, read through the settings table,
// core/config/RunSettings); throws ConfigError naming the flag.
RunConfig config_from_flags(const RunFlags& f);
// --te-impl, else its environment form TEWB_TE_IMPL, else auto; throws ConfigError naming the flag or the variable.
// config_from_flags applies it to te runs (and refuses an explicit --te-impl on a torch run); a comparison takes it
// for its te rows.
TeImpl te_impl_from_flags(const RunFlags& f);
// --repeat N: 1 when not given; throws ConfigError outside 1..kMaxRepeats.
int repeat_from_flags(const RunFlags& f);
// `sweep`: the grid, the baseline's backend (empty: torch) and the shared settings; throws ConfigError naming the flag.
SweepSpec sweep_from_flags(const RunFlags& f, const std::string& precisions, const std::string& baseline = {});
// `run`: FP8 settings with a precision that is not fp8 would be silently ignored; throws instead.
void check_fp8_flags_apply(const RunFlags& f, const RunConfig& c);

}  // namespace tewb::cli

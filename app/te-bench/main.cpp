// te-bench (and te-bench-torch, the same main): the headless command line of TE Workbench. Argument wiring
// only: the commands are in *Command(s).cpp, the work in core/. LibTorchCommands.h says which program runs what.
#include <csignal>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include <unistd.h>

#include <CLI/CLI.hpp>

#include "Arguments.h"
#include "CheckedStdout.h"
#include "HistoryCommands.h"
#include "LibTorchCommands.h"
#include "Process.h"
#include "RecipeCommand.h"
#include "core/common/Error.h"
#include "core/common/StandardStreams.h"
#include "core/common/TextCheck.h"
#include "core/results/AtomicFile.h"
#include "core/results/RunStore.h"

namespace {

using namespace tewb;
using namespace tewb::cli;

// The command that was given; errors become exit statuses: 2 a bad argument, 1 anything else.
int run_command(const Commands& c) {
    if (needs_libtorch(c)) return run_libtorch_command(c);
    if (c.recipe->parsed()) return run_recipe(c);
    if (c.export_runs->parsed()) return run_export(c);
    return run_history(c);
}

int dispatch(const Commands& c) {
    try {
        const int status = run_command(c);
        check_standard_output();
        return status;
    } catch (const ConfigError& e) {
        std::fprintf(stderr, "te-bench: %s\n", with_long_values_cut(e.what()).c_str());
        return kExitUsage;
    } catch (const Error& e) {
        std::fprintf(stderr, "te-bench: %s\n", with_long_values_cut(e.what()).c_str());
        return kExitFailure;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "te-bench: unexpected error: %s\n", with_long_values_cut(without_stack_frames(e.what())).c_str());
        return kExitFailure;
    }
}

// Every store this command may reach is protected before anything is printed or written: the default one
// whatever --store says (an export must not replace it either) and the one --store names.
void protect_the_stores(int argc, char** argv) {
    try {
        protect_run_store(RunStore::default_path());
    } catch (const DataError&) {
        // no default location: nothing to protect
    }
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--store" && i + 1 < argc) protect_run_store(argv[i + 1]);
        if (arg.starts_with("--store=")) protect_run_store(std::string(arg.substr(8)));
    }
}

}  // namespace

int main(int argc, char** argv) {
    remember_command_line(argc, argv);
    tewb::occupy_standard_descriptors();
    // A reader that went away (`te-bench … | head -1`) or a file-size limit (`ulimit -f`) would kill the process by
    // signal (exit 141, or a core dump): ignored, the write fails instead and is reported (exit 1) like any other.
    std::signal(SIGPIPE, SIG_IGN);
    std::signal(SIGXFSZ, SIG_IGN);
    protect_the_stores(argc, argv);
    // `exec 1<>runs.sqlite3`: whatever te-bench printed would be written into the store. Refused before anything
    // is; said on standard error unless that is the store too.
    if (const std::optional<StreamOnStore> stream = standard_stream_on_protected_store()) {
        if (stream->fd == STDOUT_FILENO) {
            std::fprintf(stderr, "te-bench: standard output writes into %s, which anything printed would destroy; nothing "
                                 "was done; allowed: standard output to anything else\n", stream->what.c_str());
        }
        return kExitUsage;
    }
    cli::CheckedStdout checked_stdout;
    install_standard_output(&checked_stdout);
    CLI::App app{"te-bench: train MiniGPT or a Llama-style model (--arch) on synthetic tokens or a token file (--data) with "
                 "LibTorch and TE-style modules, and measure it"};
    Commands commands;
    define_commands(app, commands);
    if (const std::optional<int> status = parse_arguments(app, commands, argc, argv)) {
        if (const std::string error = checked_stdout.flush_and_check(); *status == 0 && !error.empty()) {
            std::fprintf(stderr, "te-bench: standard output: write failed (%s)\n", error.c_str());  // --help went nowhere
            return kExitFailure;
        }
        return *status;
    }
    return dispatch(commands);
}

// te-bench (and te-bench-torch, the same main): the headless command line of TE Workbench. Argument wiring
// only: the commands are in *Command(s).cpp, the work in core/. LibTorchCommands.h says which program runs what.
#include <cstdio>
#include <exception>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "Arguments.h"
#include "CheckedStdout.h"
#include "HistoryCommands.h"
#include "LibTorchCommands.h"
#include "Process.h"
#include "RecipeCommand.h"
#include "core/common/Error.h"
#include "core/common/StandardStreams.h"

namespace {

using namespace tewb;
using namespace tewb::cli;

// The command that was given; errors become exit statuses: 2 a bad argument, 1 anything else.
int run_command(const Commands& c) {
    if (needs_libtorch(c)) return run_libtorch_command(c);
    if (c.recipe->parsed()) return run_recipe(c);
    return run_history(c);
}

int dispatch(const Commands& c) {
    try {
        const int status = run_command(c);
        check_standard_output();
        return status;
    } catch (const ConfigError& e) {
        std::fprintf(stderr, "te-bench: %s\n", e.what());
        return kExitUsage;
    } catch (const Error& e) {
        std::fprintf(stderr, "te-bench: %s\n", e.what());
        return kExitFailure;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "te-bench: unexpected error: %s\n", e.what());
        return kExitFailure;
    }
}

}  // namespace

int main(int argc, char** argv) {
    remember_command_line(argc, argv);
    tewb::occupy_standard_descriptors();
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

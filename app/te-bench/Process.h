#pragma once

#include <atomic>

namespace tewb::cli {

class CheckedStdout;

// te-bench's exit statuses (README, "Exit statuses"); 2, a bad argument, is Arguments.h's kExitUsage.
inline constexpr int kExitFailure = 1;
inline constexpr int kExitNotSaved = 3;  // a run ended but could not be saved in the run store (kept as JSON instead)
inline constexpr int kExitSkipped = 77;  // CTest's skip code: no GPU to check
inline constexpr int kExitInterrupted = 130;

// Set by the first SIGINT, SIGTERM or SIGHUP once stop_cleanly_on_signals() ran: a run stops after its step.
std::atomic<bool>& cancel_requested();
// The first signal stops the run in progress after its current step (saved as cancelled); a second quits at
// once, stopping a job's ranks too. A rank of a job this program launched stays quiet: its launcher speaks.
void stop_cleanly_on_signals();

// The command line as main received it: `run --nproc` starts its workers with it.
struct CommandLine {
    int argc = 0;
    char** argv = nullptr;
};
void remember_command_line(int argc, char** argv);
const CommandLine& command_line();

// std::cout's checked buffer (main installs it); check_standard_output throws DataError when output written to
// it never arrived (/dev/full, a closed stdout, a full disk).
void install_standard_output(CheckedStdout* buffer);
void check_standard_output();

}  // namespace tewb::cli

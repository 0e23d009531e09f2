// The process-wide part of te-bench: its command line, the cancel flag its signals set, standard output.
#include "Process.h"

#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <string>
#include <string_view>

#include "CheckedStdout.h"
#include "core/common/Error.h"
#include "core/dist/LocalJob.h"

namespace tewb::cli {

namespace {

std::atomic<bool> g_cancel{false};
CommandLine g_command_line;
CheckedStdout* g_stdout = nullptr;  // std::cout's buffer, installed by main
std::atomic<int> g_interrupts{0};

bool g_announce_interrupts = true;  // a rank of a job this program launched stays quiet: its launcher speaks

void say_from_handler(std::string_view text) {
    if (g_announce_interrupts) (void)!::write(STDERR_FILENO, text.data(), text.size());
}

// The first Ctrl-C (or kill, or a closed terminal) ends the run after its current step, and it is saved as
// cancelled; a second one quits at once and says what that discards. Only async-signal-safe calls here.
extern "C" void on_interrupt(int /*signal_number*/) {
    g_cancel.store(true);
    if (g_interrupts.fetch_add(1) == 0) {
        say_from_handler("te-bench: stopping after the current step; the run is saved as cancelled, and no further "
                         "run starts. Ctrl-C again quits at once without saving it.\n");
        return;
    }
    tewb::kill_running_ranks();
    say_from_handler("te-bench: quit at once: the run in progress is not saved; runs saved before it are kept.\n");
    ::_exit(kExitInterrupted);
}

}  // namespace

std::atomic<bool>& cancel_requested() {
    return g_cancel;
}

void remember_command_line(int argc, char** argv) {
    g_command_line = {argc, argv};
}

const CommandLine& command_line() {
    return g_command_line;
}

void install_standard_output(CheckedStdout* buffer) {
    g_stdout = buffer;
}

void stop_cleanly_on_signals() {
    const auto value = [](const char* name) { const char* v = std::getenv(name); return std::string_view(v == nullptr ? "" : v); };
    g_announce_interrupts = value(kRankRecordVariable).empty() && (value("RANK").empty() || value("RANK") == "0");
    for (const int signal_number : {SIGINT, SIGTERM, SIGHUP}) std::signal(signal_number, on_interrupt);
}

// Output that never arrived is an error, not a success: /dev/full, a closed stdout, a full disk.
void check_standard_output() {
    if (g_stdout == nullptr) return;
    if (const std::string error = g_stdout->flush_and_check(); !error.empty()) {
        throw DataError("standard output: write failed (" + error + ")");
    }
}

}  // namespace tewb::cli

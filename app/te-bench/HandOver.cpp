// te-bench's half of run_libtorch_command: te-bench-torch takes over this process (same process id, standard
// streams, environment and signals), so a caller that waits for te-bench waits for the run.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

#include "LibTorchCommands.h"
#include "Process.h"
#include "RunChecks.h"
#include "core/common/Error.h"

namespace tewb::cli {

int run_libtorch_command(const Commands& c) {
    check_before_libtorch(c);  // a bad argument is answered here, without LibTorch
    namespace fs = std::filesystem;
    std::error_code error;
    const fs::path self = fs::read_symlink("/proc/self/exe", error);
    if (error) {
        throw Error(std::string("cannot find this program's own file to start ") + kLibTorchProgram +
                    " beside it (/proc/self/exe: " + error.message() + ")");
    }
    const fs::path program = self.parent_path() / kLibTorchProgram;
    check_standard_output();  // nothing is pending before a command; anything written must not be lost on exec
    std::fflush(nullptr);
    ::execv(program.c_str(), command_line().argv);
    const int reason = errno;
    throw Error(program.string() + ": cannot be started (" + std::strerror(reason) + "); te-bench runs info, selftest, "
                "run, compare and sweep in that program, installed beside it: reinstall TE Workbench or rebuild it");
}

}  // namespace tewb::cli

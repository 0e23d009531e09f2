#pragma once

#include "Arguments.h"

namespace tewb::cli {

// The commands that need LibTorch: info, selftest, run, compare, sweep. te-bench itself does not link LibTorch
// (loading it costs half a second before anything else happens), so history, recipe and every bad argument are
// answered at once; it hands these commands over to te-bench-torch, installed beside it, which runs them.
inline bool needs_libtorch(const Commands& c) {
    return c.info->parsed() || c.selftest->parsed() || c.run->parsed() || c.compare->parsed() || c.sweep->parsed();
}

// The file name of the program that runs them.
inline constexpr const char* kLibTorchProgram = "te-bench-torch";

// In te-bench: replaces this process with te-bench-torch and the same command line (it parses and checks it
// again, the same way); returns only by throwing when that program cannot be started. In te-bench-torch: runs
// the command. Returns the exit status; a bad argument throws ConfigError.
int run_libtorch_command(const Commands& c);

}  // namespace tewb::cli

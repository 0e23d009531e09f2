#pragma once

#include "Arguments.h"

namespace tewb::cli {

// Returns the exit status; a bad argument throws ConfigError.
int run_history(const Commands& c);
// te-bench export: saved runs as TensorBoard event files.
int run_export(const Commands& c);

}  // namespace tewb::cli

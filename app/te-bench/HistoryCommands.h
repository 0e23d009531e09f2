#pragma once

#include "Arguments.h"

namespace tewb::cli {

// Returns the exit status; a bad argument throws ConfigError.
int run_history(const Commands& c);

}  // namespace tewb::cli

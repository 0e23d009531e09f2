#pragma once

#include "Arguments.h"

namespace tewb::cli {

// Each returns the exit status; a bad argument throws ConfigError.
int run_info(const Commands& c);
int run_selftest(const Commands& c);

}  // namespace tewb::cli

#pragma once

#include "Arguments.h"

namespace tewb::cli {

// Each returns the exit status; a bad argument throws ConfigError.
int run_one(const Commands& c);
int run_compare(const Commands& c);
int run_sweep(const Commands& c);

}  // namespace tewb::cli

#pragma once

#include "Arguments.h"

namespace tewb::cli {

// te-bench recipe: the FP8 recipe's scales replayed over given amax values. Returns the exit status; a bad
// argument throws ConfigError. Needs no LibTorch.
int run_recipe(const Commands& c);

}  // namespace tewb::cli

#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/device/DeviceInfo.h"
#include "core/config/RunConfig.h"

namespace tewb {

// One row of a comparison: the configuration and, when this machine or build cannot run it, why.
struct PlannedRun {
    RunConfig config;
    std::optional<std::string> skip_reason;
};

// The baseline (torch backend: BF16 on a GPU, FP32 on the CPU) first, then every other configuration
// of the preset: the other torch precision, te FP32 (on the CPU, like for like with the baseline), te BF16
// and te FP8 (with base.fp8 as its recipe); on a GPU, with base.cuda_graph, torch BF16, te BF16 and te
// FP8 again as CUDA graphs ("… graph"), each after its eager row. Rows this device or build cannot run
// carry the reason. `base` supplies the preset's sizes, step counts and FP8 recipe (a caller may have
// changed them); its inspect_fp8 applies to the FP8 row and its te_impl to the te rows; its architecture and data to
// every row (a llama's rows are named "llama …"). Throws ConfigError when those are invalid.
std::vector<PlannedRun> plan_comparison(const RunConfig& base, const DeviceInfo& device);

}  // namespace tewb

#include "core/fp8/Recipe.h"

#include <string>

#include "core/common/Choice.h"

namespace tewb {

std::vector<ConfigProblem> find_recipe_problems(const Fp8Recipe& recipe, std::string_view history_flag) {
    std::vector<ConfigProblem> problems;
    if (recipe.amax_history_len < 1 || recipe.amax_history_len > Fp8Recipe::kMaxHistoryLen) {
        problems.push_back({std::string(history_flag.substr(2)), std::string(history_flag) + " " +
                                                    std::to_string(recipe.amax_history_len) +
                                                    ": out of range; allowed: 1 to " +
                                                    std::to_string(Fp8Recipe::kMaxHistoryLen)});
    }
    if (recipe.margin < 0 || recipe.margin > Fp8Recipe::kMaxMargin) {
        problems.push_back({"margin", "--margin " + std::to_string(recipe.margin) +
                                          (recipe.margin < 0 ? ": negative" : ": too large") +
                                          "; allowed: 0 to " + std::to_string(Fp8Recipe::kMaxMargin) +
                                          " (the scale is divided by 2^margin)"});
    }
    if (recipe.scaling != ScalingKind::Delayed && recipe.margin != 0) {
        const std::string kind(to_string(recipe.scaling));
        problems.push_back({"margin", "--margin " + std::to_string(recipe.margin) + ": " + kind +
                                          " scaling has no margin (scale = fp8_max / amax of the " +
                                          (recipe.scaling == ScalingKind::Current ? "tensor" : "block") +
                                          "); allowed with --recipe " + kind + ": 0"});
    }
    if (recipe.scaling == ScalingKind::Nvfp4 && recipe.format != RecipeFormat::E4M3) {
        problems.push_back({"fp8-format", "--fp8-format " + std::string(to_string(recipe.format)) +
                                              " with --recipe nvfp4: NVFP4 has one element format (E2M1, with E4M3 "
                                              "block scales) for every tensor; allowed with --recipe nvfp4: e4m3 (the "
                                              "default)"});
    }
    return problems;
}

RecipeFormat default_recipe_format(ScalingKind scaling) {
    return scaling == ScalingKind::Block || is_microscaling(scaling) ? RecipeFormat::E4M3 : RecipeFormat::Hybrid;
}

bool fp8_gemms_emulated(OpsKind kind, ScalingKind scaling, bool block_gemms_native) {
    return kind != OpsKind::FusedCuda || is_microscaling(scaling) || (scaling == ScalingKind::Block && !block_gemms_native);
}

}  // namespace tewb

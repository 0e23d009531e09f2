#include "core/fp8/ReplayReport.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/common/Error.h"
#include "core/common/NumberText.h"
#include "core/common/TextTable.h"

namespace tewb {

namespace {

using Json = nlohmann::ordered_json;

Json value(float x) {
    if (const auto word = non_finite_text(x)) return *word;
    return static_cast<double>(x);
}

std::string text(float x) {
    if (const auto word = non_finite_text(x)) return std::string(*word);
    std::ostringstream out;
    out.precision(9);
    out << x;
    return out.str();
}

}  // namespace

void validate(const RecipeReplay& replay, std::string_view history_flag) {
    Fp8Recipe recipe;
    recipe.scaling = replay.scaling;
    recipe.amax_history_len = replay.history_len;
    recipe.algo = replay.algo;
    recipe.margin = replay.margin;
    const std::vector<ConfigProblem> problems = find_recipe_problems(recipe, history_flag);
    if (!problems.empty()) {
        throw ConfigError(problems.front().message);
    }
}

std::string replay_json_text(const RecipeReplay& replay, const std::vector<RecipeReplayStep>& steps) {
    Json document;
    document["recipe"] = std::string(to_string(replay.scaling));
    document["dtype"] = std::string(to_string(replay.dtype));
    document["history_len"] = replay.history_len;
    document["algo"] = std::string(to_string(replay.algo));
    document["margin"] = replay.margin;
    if (replay.calibrate_first_step) document["calibrate_first_step"] = true;
    Json rows = Json::array();
    for (const RecipeReplayStep& step : steps) {
        Json row;
        row["step"] = step.step;
        row["amax"] = value(step.amax);
        row["scale_used"] = value(step.scale_used);
        row["scale_next"] = value(step.scale_next);
        row["scale_inv_next"] = value(step.scale_inv_next);
        Json history = Json::array();
        for (const float h : step.history) {
            history.push_back(value(h));
        }
        row["history"] = std::move(history);
        if (step.history_size > step.history.size()) {
            row["history_omitted"] = step.history_size - step.history.size();  // older entries not listed
        }
        rows.push_back(std::move(row));
    }
    document["steps"] = std::move(rows);
    return document.dump() + "\n";
}

std::string replay_table_text(const RecipeReplay& replay, const std::vector<RecipeReplayStep>& steps) {
    constexpr std::size_t kShownHistory = 8;
    std::vector<std::vector<std::string>> rows;
    for (const RecipeReplayStep& step : steps) {
        std::string history;
        const std::size_t shown = std::min(step.history.size(), kShownHistory);
        if (step.history_size > shown) {
            history = "(" + std::to_string(step.history_size - shown) + " older) ...";
        }
        for (std::size_t i = step.history.size() - shown; i < step.history.size(); ++i) {
            history += (history.empty() ? "" : " ") + text(step.history[i]);
        }
        rows.push_back({std::to_string(step.step), text(step.amax), text(step.scale_used), text(step.scale_next),
                        history.empty() ? "-" : history});
    }
    std::ostringstream out;
    out << to_string(replay.scaling) << " scaling, " << to_string(replay.dtype) << " (max " << text(fp8_max(replay.dtype))
        << ")";
    if (replay.scaling == ScalingKind::Delayed) {
        out << ", history " << replay.history_len << ", " << to_string(replay.algo) << ", margin " << replay.margin;
        if (replay.calibrate_first_step) out << ", first step calibrated";
    }
    out << "\n" << render_text_table({"step", "amax", "scale used", "scale next", "history after (index 0 first)"}, rows);
    return out.str();
}

std::string block_scaling_explanation(bool json) {
    const std::string text =
        "Block scaling (Float8BlockScaling) has no amax history, so there is nothing to replay: every cast splits "
        "its tensor into blocks (1x128 along the rows for activations and gradients, 128x128 tiles for weights) and "
        "gives each block its own scale, fp8_max / the block's amax, rounded down to a power of two unless "
        "--block-scales exact, and 1 for a block whose amax is 0, inf or NaN. A spike in one step or in one block "
        "changes only that block's scale in that step. Compare recipes on real tensors with te-bench run "
        "--inspect-fp8 (the what-if columns).";
    if (json) return nlohmann::json{{"recipe", "block"}, {"history", false}, {"explanation", text}}.dump(2) + "\n";
    return text + "\n";
}

}  // namespace tewb

// te-bench recipe: the FP8 recipe replayed over amax values the user gives.
#include "RecipeCommand.h"

#include <iostream>
#include <string>
#include <vector>

#include "core/common/Error.h"
#include "core/fp8/ReplayReport.h"

namespace tewb::cli {

namespace {

// A setting with two accepted flags (its name and an older alias): the text, and the flag it came with, for
// messages in the user's words.
struct SpelledSetting {
    const char* flag;
    std::string text;
};

SpelledSetting either_spelling(const char* name, const std::string& text, const char* alias, const std::string& alias_text) {
    if (!text.empty() && !alias_text.empty()) {
        throw ConfigError(std::string(name) + " and " + alias + ": the same setting given twice; allowed: one of them");
    }
    return alias_text.empty() ? SpelledSetting{name, text} : SpelledSetting{alias, alias_text};
}

}  // namespace

int run_recipe(const Commands& c) {
    RecipeReplay replay;
    if (!c.replay_recipe.empty()) replay.scaling = parse_name<ScalingKind>("--recipe", c.replay_recipe);
    if (!c.replay_dtype.empty()) replay.dtype = parse_name<Fp8Dtype>("--dtype", c.replay_dtype);
    const SpelledSetting history = either_spelling("--amax-history-len", c.replay_history_len, "--history-len",
                                                   c.replay_history_len_alias);
    if (!history.text.empty()) replay.history_len = parse_int(history.flag, history.text);
    const SpelledSetting algo = either_spelling("--amax-algo", c.replay_algo, "--algo", c.replay_algo_alias);
    if (!algo.text.empty()) replay.algo = parse_name<AmaxAlgo>(algo.flag, algo.text);
    if (!c.replay_margin.empty()) replay.margin = parse_int("--margin", c.replay_margin);
    if (!c.replay_calibrate.empty()) {
        replay.calibrate_first_step = parse_on_off("--calibrate-first-step", c.replay_calibrate);
        if (replay.scaling != ScalingKind::Delayed) throw ConfigError("--calibrate-first-step goes with --recipe delayed");
    }
    replay.amaxes = parse_amax_list("--amax", c.replay_amax);
    validate(replay, history.flag);  // every recipe: a margin where it has none is refused as run refuses it
    if (is_microscaling(replay.scaling)) {
        if (replay.amaxes.empty()) throw ConfigError("--amax: empty; allowed: one or more amax values");
        std::cout << microscaling_replay_text(replay, c.replay_json);
        return 0;
    }
    if (replay.scaling == ScalingKind::Block) {
        // Nothing to replay: a block's scale depends on that block alone, in this step alone.
        std::cout << block_scaling_explanation(c.replay_json);
        return 0;
    }
    const std::vector<RecipeReplayStep> steps =
        replay_recipe(replay.scaling, replay.dtype, replay.history_len, replay.algo, replay.margin, replay.amaxes,
                      replay.calibrate_first_step);
    std::cout << (c.replay_json ? replay_json_text(replay, steps) : replay_table_text(replay, steps));
    return 0;
}

}  // namespace tewb::cli

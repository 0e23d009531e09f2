#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/fp8/ScaleUpdate.h"

namespace tewb {

// What `te-bench recipe` replays: the settings of one slot and the amax of each step.
struct RecipeReplay {
    ScalingKind scaling = ScalingKind::Delayed;
    Fp8Dtype dtype = Fp8Dtype::E4M3;
    int history_len = 16;
    AmaxAlgo algo = AmaxAlgo::Max;
    int margin = 0;
    bool calibrate_first_step = false;  // delayed scaling only
    std::vector<float> amaxes;
};

// Throws ConfigError naming the playground's flags (`history_flag`, as the user spelled it, and --margin) when a
// setting is out of range.
void validate(const RecipeReplay& replay, std::string_view history_flag = "--amax-history-len");

// The JSON contract of docs/fp8.md ("recipe", "dtype", "history_len", "algo", "margin", then
// "calibrate_first_step": true only when set, "steps"), keys in that order. Float32 values print as the exact decimal of the float (so a float64 reader sees the
// very value the slot holds); non-finite ones as "inf", "-inf", "nan".
std::string replay_json_text(const RecipeReplay& replay, const std::vector<RecipeReplayStep>& steps);
// A table for people: step, amax, scale used, scale next, the history (shortened when long).
std::string replay_table_text(const RecipeReplay& replay, const std::vector<RecipeReplayStep>& steps);

// What the playground says for --recipe block: there is nothing to replay (no history; each block's
// scale comes from that block in that step), and the rule. As text, or as {"recipe": "block",
// "history": false, "explanation": …} with `json`.
std::string block_scaling_explanation(bool json);

// What the playground says for --recipe mxfp8 or nvfp4: no history either, the rule, and for each amax what a cast
// would scale by: MXFP8 the E8M0 scale of the block holding that amax (code, 2^e and what its values are multiplied
// by, the OCP rule for `dtype`), NVFP4 the tensor scale s_enc and s_dec of a tensor with that amax. As a table, or
// as {"recipe", "history": false, "explanation", "steps": [{"step", "amax", ...}]} with `json`.
std::string microscaling_replay_text(const RecipeReplay& replay, bool json);

}  // namespace tewb

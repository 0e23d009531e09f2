#pragma once

#include <string_view>
#include <vector>

#include "core/fp8/Recipe.h"

namespace tewb {

// The scale-update rule of FP8_RECIPE.md for one slot, in float32 on the host: the definition that the
// tensor implementation (Fp8State) and the GPU kernel are checked against bit for bit.
struct SlotScaleState {
    float scale = 1.0f;
    std::vector<float> history;  // length L; index 0 is the staging entry the casts record into

    explicit SlotScaleState(int history_len) : history(static_cast<std::size_t>(history_len), 0.0f) {}
};

// fp8_max / 2^margin, exactly (a power-of-two division).
float scale_numerator(float fp8_max, int margin);

// One delayed-scaling update of a slot whose staged amax is history[0].
void update_delayed(SlotScaleState& slot, float fp8_max, AmaxAlgo algo, int margin);

// The scale a current-scaling cast uses for a tensor with this amax: fp8_max / amax; 1.0 when the amax
// is 0, inf or NaN; FLT_MAX when the quotient overflows.
float current_scale(float amax, float fp8_max);

// What `te-bench recipe` prints: the rule replayed on a sequence of amaxes for one slot.
struct RecipeReplayStep {
    int step = 0;  // 1-based
    float amax = 0;
    float scale_used = 0;  // the scale this step's cast quantized with
    float scale_next = 0;  // after this step's update
    float scale_inv_next = 0;
    // The history after the update, index 0 first, cut to its newest kReplayHistoryKept entries so a
    // long replay with a long window stays small (65536 x 1e6 floats would not); `history_size` is the
    // whole window's length. Both empty for current scaling.
    static constexpr std::size_t kReplayHistoryKept = 16;
    std::vector<float> history;
    std::size_t history_size = 0;
};

// A comma-separated list of amaxes ("3.5,0,1e-40,inf,nan"): each a non-negative float32 value, inf or
// nan. Throws ConfigError naming `flag`, the item's position and text, and what is allowed.
std::vector<float> parse_amax_list(std::string_view flag, std::string_view text);

// With `calibrate_first_step` (delayed scaling), step 1 uses the scale its own amax gives under the rule
// (Fp8Recipe::calibrate_first_step) instead of 1; the history and every later step follow the same rule.
std::vector<RecipeReplayStep> replay_recipe(ScalingKind scaling, Fp8Dtype dtype, int history_len, AmaxAlgo algo, int margin,
                                            const std::vector<float>& amaxes, bool calibrate_first_step = false);

}  // namespace tewb

#include "core/fp8/ScaleUpdate.h"

#include <algorithm>
#include <cfloat>
#include <limits>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

#include "core/common/Error.h"

namespace tewb {

namespace {

// The window's reduction, Transformer Engine's (fmaxf): a NaN entry is passed over, so the result is NaN
// only when every entry is; an inf wins. The tensor and kernel reductions do the same.
float window_max(float a, float b) {
    return std::fmax(a, b);
}

}  // namespace

float scale_numerator(float fp8_max, int margin) {
    return fp8_max / std::ldexp(1.0f, margin);
}

void update_delayed(SlotScaleState& slot, float fp8_max, AmaxAlgo algo, int margin) {
    std::vector<float>& h = slot.history;
    const float staged = h[0];
    if (staged == 0.0f) {  // the slot was not used since the last update
        return;
    }
    float amax = staged;
    if (algo == AmaxAlgo::Max) {
        for (std::size_t i = 1; i < h.size(); ++i) {
            amax = window_max(amax, h[i]);
        }
    }
    // Roll: h[1..L-2] <- h[2..L-1], newest at the end, index 0 cleared for the next step.
    if (h.size() > 1) {
        std::rotate(h.begin() + 1, h.begin() + 2, h.end());
        h.back() = staged;
    }
    h[0] = 0.0f;
    if (std::isfinite(amax) && amax > 0.0f) {
        const float scale = scale_numerator(fp8_max, margin) / amax;
        slot.scale = std::isinf(scale) ? FLT_MAX : scale;
    }
}

float current_scale(float amax, float fp8_max) {
    if (!std::isfinite(amax) || amax <= 0.0f) {
        return 1.0f;
    }
    const float scale = fp8_max / amax;
    return std::isinf(scale) ? FLT_MAX : scale;
}

std::vector<float> parse_amax_list(std::string_view flag, std::string_view text) {
    constexpr std::size_t kMaxItems = 1'000'000;
    std::vector<float> values;
    std::size_t start = 0;
    while (true) {
        const std::size_t end = std::min(text.find(',', start), text.size());
        const std::string_view item = text.substr(start, end - start);
        const std::string where = std::string(flag) + " item " + std::to_string(values.size() + 1) + " '" + std::string(item) + "'";
        double value = 0;
        const auto [ptr, error] = std::from_chars(item.data(), item.data() + item.size(), value);
        if (item.empty() || error == std::errc::invalid_argument || ptr != item.data() + item.size()) {
            throw ConfigError(where + ": not a number; allowed: comma-separated non-negative numbers, inf or nan, e.g. 3.5,0,1e-40,inf");
        }
        if (error == std::errc::result_out_of_range) {
            value = std::strtod(std::string(item).c_str(), nullptr);  // the syntax is checked: ±HUGE_VAL or a tiny value
        }
        if (value < 0 || std::signbit(value)) {
            if (!(value == 0)) {
                throw ConfigError(where + ": negative; an amax is a maximum of absolute values; allowed: 0 or more, inf, nan");
            }
            value = 0;
        }
        const bool overflowed = error == std::errc::result_out_of_range && std::isinf(value);
        if (overflowed || (std::isfinite(value) && value > std::numeric_limits<float>::max())) {
            throw ConfigError(where + ": beyond float32's largest finite value (3.4028235e38); allowed: a float32 value, or inf");
        }
        values.push_back(static_cast<float>(value));
        if (values.size() > kMaxItems) {
            throw ConfigError(std::string(flag) + ": more than " + std::to_string(kMaxItems) + " values; allowed: at most that many");
        }
        if (end == text.size()) {
            break;
        }
        start = end + 1;
    }
    return values;
}

std::vector<RecipeReplayStep> replay_recipe(ScalingKind scaling, Fp8Dtype dtype, int history_len, AmaxAlgo algo, int margin,
                                            const std::vector<float>& amaxes, bool calibrate_first_step) {
    const float max = fp8_max(dtype);
    SlotScaleState slot(history_len);
    std::vector<RecipeReplayStep> steps;
    for (std::size_t i = 0; i < amaxes.size(); ++i) {
        RecipeReplayStep step;
        step.step = static_cast<int>(i) + 1;
        step.amax = amaxes[i];
        if (scaling == ScalingKind::Current) {
            step.scale_used = current_scale(amaxes[i], max);
            step.scale_next = step.scale_used;
        } else {
            if (calibrate_first_step && i == 0) slot.scale = current_scale(amaxes[i], scale_numerator(max, margin));
            step.scale_used = slot.scale;
            slot.history[0] = amaxes[i];
            update_delayed(slot, max, algo, margin);
            step.scale_next = slot.scale;
            const std::size_t kept = std::min(slot.history.size(), RecipeReplayStep::kReplayHistoryKept);
            step.history.assign(slot.history.end() - static_cast<std::ptrdiff_t>(kept), slot.history.end());
            step.history_size = slot.history.size();
        }
        step.scale_inv_next = 1.0f / step.scale_next;
        steps.push_back(std::move(step));
    }
    return steps;
}

}  // namespace tewb

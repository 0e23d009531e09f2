// The amax list of `te-bench recipe --amax`: any text is parsed or refused with ConfigError, and a parsed
// list replays through the delayed and current rules into both output formats.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/common/Error.h"
#include "core/fp8/ReplayReport.h"
#include "core/fp8/ScaleUpdate.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    std::vector<float> amaxes;
    try {
        amaxes = tewb::parse_amax_list("--amax", text);
    } catch (const tewb::ConfigError&) {
        return 0;
    }
    tewb::RecipeReplay replay;
    replay.amaxes = amaxes;
    replay.history_len = 1 + static_cast<int>(size % 64);
    for (const tewb::ScalingKind scaling : {tewb::ScalingKind::Delayed, tewb::ScalingKind::Current}) {
        replay.scaling = scaling;
        const auto steps = tewb::replay_recipe(replay.scaling, replay.dtype, replay.history_len, replay.algo, replay.margin,
                                               replay.amaxes);
        (void)tewb::replay_json_text(replay, steps);
        (void)tewb::replay_table_text(replay, steps);
    }
    return 0;
}

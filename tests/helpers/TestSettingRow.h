#pragma once
// A settings row only the tests have ("--test-knob", a whole number 1 to 99, default 7), for the tests that add a
// row to the table (ExtraRunSetting) and find it in te-bench, the record and the form with no other edit. Its value
// lives in `test_knob`: a real setting's is a RunConfig member.

#include <cstdint>
#include <string_view>
#include <variant>

#include "core/config/RunSettings.h"

namespace tewb::test {

inline std::int64_t test_knob = 7;

inline RunSetting test_knob_row() {
    return RunSetting{.id = "test-knob", .flag = "--test-knob", .section = SettingSection::Config, .json_key = "test_knob",
                      .label = "Test knob", .kind = SettingKind::Integer, .use = SettingUse::Always,
                      .valid = IntRange{1, 99}, .stored = IntRange{1, 99}, .when_absent = SettingValue{std::int64_t{7}},
                      .help = "a knob only this test has",
                      .get = [](const RunConfig&) -> SettingValue { return test_knob; },
                      .set = [](RunConfig&, const SettingValue& v, std::string_view) { test_knob = std::get<std::int64_t>(v); }};
}

}  // namespace tewb::test

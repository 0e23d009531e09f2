#pragma once

#include <string>
#include <vector>

#include "core/config/RunConfig.h"

namespace tewb {

// One setting two runs were given differently: where it sits in the record's configuration ("hidden",
// "fp8.recipe") and each run's value as the record writes it ("(not set)" where a run has none).
struct SettingDifference {
    std::string setting;
    std::string a;
    std::string b;
    friend bool operator==(const SettingDifference&, const SettingDifference&) = default;
};

// Every setting of two run configurations that differs, sorted by where it sits in the record (the run's name
// included; a setting written for one run only, such as FP8's for an FP8 run, reads "(not set)" for the other):
// what the window's "Compare settings" and `te-bench history diff` show. Empty when they are the same.
std::vector<SettingDifference> config_differences(const RunConfig& a, const RunConfig& b);

}  // namespace tewb

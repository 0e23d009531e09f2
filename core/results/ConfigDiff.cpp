#include "core/results/ConfigDiff.h"

#include <utility>

#include <nlohmann/json.hpp>

#include "core/results/RecordJson.h"

namespace tewb {

namespace {

constexpr const char* kNotSet = "(not set)";

// The leaves of `json` in document order, as (dotted path, value text): strings without their quotes, arrays
// element by element ("dist.ranks[1]").
void flatten(const nlohmann::json& json, const std::string& path, std::vector<std::pair<std::string, std::string>>& out) {
    if (json.is_object()) {
        for (const auto& [key, value] : json.items()) flatten(value, path.empty() ? key : path + "." + key, out);
    } else if (json.is_array() && !json.empty()) {
        for (std::size_t i = 0; i < json.size(); ++i) flatten(json[i], path + "[" + std::to_string(i) + "]", out);
    } else if (json.is_string()) {
        out.emplace_back(path, json.get<std::string>());
    } else {
        out.emplace_back(path, json.is_null() ? std::string(kNotSet) : json.dump());
    }
}

std::vector<std::pair<std::string, std::string>> leaves(const RunConfig& config) {
    std::vector<std::pair<std::string, std::string>> out;
    flatten(to_json(config), "", out);
    return out;
}

}  // namespace

std::vector<SettingDifference> config_differences(const RunConfig& a, const RunConfig& b) {
    const auto left = leaves(a);
    const auto right = leaves(b);
    const auto find = [](const std::vector<std::pair<std::string, std::string>>& in, const std::string& key) -> const std::string* {
        for (const auto& [k, v] : in) {
            if (k == key) return &v;
        }
        return nullptr;
    };
    std::vector<SettingDifference> out;
    for (const auto& [key, value] : left) {
        const std::string* other = find(right, key);
        if (!other || *other != value) out.push_back({key, value, other ? *other : kNotSet});
    }
    for (const auto& [key, value] : right) {
        if (!find(left, key)) out.push_back({key, kNotSet, value});
    }
    return out;
}

}  // namespace tewb

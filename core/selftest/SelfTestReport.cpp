#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/common/TextTable.h"
#include "core/selftest/SelfTest.h"

namespace tewb {

bool SelfTestReport::passed() const {
    return ran && error.empty() && !cases.empty() &&
           std::all_of(cases.begin(), cases.end(), [](const SelfTestCase& c) { return c.passed(); });
}

std::string render_self_test_table(const SelfTestReport& report) {
    if (!report.ran) return "self-test skipped: " + report.skip_reason + "\n";
    std::vector<std::vector<std::string>> rows;
    for (const SelfTestCase& c : report.cases) {
        rows.push_back({c.op, c.what, c.shape, c.dtype, c.failure.empty() ? format_significant(c.error) : "-",
                        c.failure.empty() ? format_significant(c.max_error) : "-", format_significant(c.bound), c.passed() ? "pass" : "FAIL"});
    }
    std::string text = "self-test on " + report.device + " (seed " + std::to_string(report.seed) + ")\n" +
                       render_text_table({"op", "output", "shape", "dtype", "error", "max error", "bound", "result"}, rows);
    const auto failed = std::count_if(report.cases.begin(), report.cases.end(), [](const SelfTestCase& c) { return !c.passed(); });
    for (const SelfTestCase& c : report.cases) {
        if (!c.failure.empty()) text += "FAIL " + c.op + " " + c.what + " " + c.shape + " " + c.dtype + ": " + c.failure + "\n";
    }
    if (!report.error.empty()) text += "stopped by an error: " + report.error + "\n";
    text += std::to_string(report.cases.size()) + " checks, " + std::to_string(failed) + " failed\n";
    return text;
}

std::string self_test_json_text(const SelfTestReport& report) {
    nlohmann::ordered_json j;
    j["ran"] = report.ran;
    if (!report.ran) j["skip_reason"] = report.skip_reason;
    j["device"] = report.device;
    j["seed"] = report.seed;
    j["passed"] = report.passed();
    if (!report.error.empty()) j["error"] = report.error;
    j["cases"] = nlohmann::ordered_json::array();
    for (const SelfTestCase& c : report.cases) {
        nlohmann::ordered_json row{{"op", c.op},       {"output", c.what},         {"shape", c.shape},
                                   {"dtype", c.dtype}, {"error", c.error},         {"max_error", c.max_error},
                                   {"bound", c.bound}, {"passed", c.passed()}};
        if (!c.failure.empty()) row["failure"] = c.failure;
        j["cases"].push_back(std::move(row));
    }
    return j.dump(2) + "\n";
}

}  // namespace tewb

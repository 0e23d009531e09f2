#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tewb {

// Numbers that are not finite are written the same way in every text, CSV and JSON output: "nan",
// "inf", "-inf" (JSON has no literal for them). Empty for a finite value.
std::optional<std::string_view> non_finite_text(double value);

// The shortest text that reads back to the same value (0.02, not 0.0199999995529651), or the words above.
std::string shortest_text(double value);
std::string shortest_text(float value);
// The shortest text that reads back to the same value, written as a person would between 1e-4 and 1e15
// (0.0003 and 500000, not 3e-04 and 5e+05); shortest_text outside that range.
std::string readable_number(double value);

}  // namespace tewb

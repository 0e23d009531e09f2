#include "core/ledger/ObservedTorchOps.h"

#include <charconv>

#include "core/common/Error.h"

namespace tewb {

extern const char kObservedTorchOpsCsv[];  // observed_torch_ops_text.cpp, generated from the .csv

namespace {

std::vector<std::string_view> fields_of(std::string_view line) {
    std::vector<std::string_view> fields;
    std::size_t start = 0;
    while (true) {
        const std::size_t comma = line.find(',', start);
        fields.push_back(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (comma == std::string_view::npos) return fields;
        start = comma + 1;
    }
}

[[noreturn]] void bad_line(std::size_t number, std::string_view line, const std::string& why) {
    throw DataError("observed_torch_ops.csv line " + std::to_string(number) + " \"" + std::string(line) + "\": " + why);
}

std::uint64_t count_from(std::string_view text, std::size_t number, std::string_view line) {
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || text.empty() || value > 16) {
        bad_line(number, line, "a count is not a whole number from 0 to 16");
    }
    return value;
}

}  // namespace

std::vector<ObservedTorchOp> parse_observed_torch_ops(std::string_view text) {
    std::vector<ObservedTorchOp> rows;
    std::size_t number = 0;
    while (!text.empty()) {
        const std::size_t end = text.find('\n');
        std::string_view line = text.substr(0, end);
        text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
        ++number;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty() || line.front() == '#') continue;
        const std::vector<std::string_view> f = fields_of(line);
        if (f.size() != 5) bad_line(number, line, "expected 5 fields: op,kernels,helper_kernels,memsets,memsets_inferred");
        if (f[0].empty() || f[0].find("::") != std::string_view::npos || f[0].find(' ') != std::string_view::npos) {
            bad_line(number, line, "the op is LibTorch's name without its namespace, e.g. native_layer_norm_backward");
        }
        if (f[4] != "yes" && f[4] != "no") bad_line(number, line, "memsets_inferred is yes or no");
        ObservedTorchOp row{std::string(f[0]), count_from(f[1], number, line), count_from(f[2], number, line),
                            count_from(f[3], number, line), f[4] == "yes"};
        if (row.kernels + row.helper_kernels + row.memsets == 0) bad_line(number, line, "an observed op runs something");
        for (const ObservedTorchOp& seen : rows) {
            if (seen.op == row.op) bad_line(number, line, "a second entry for " + row.op);
        }
        rows.push_back(std::move(row));
    }
    return rows;
}

const std::vector<ObservedTorchOp>& observed_torch_ops() {
    static const std::vector<ObservedTorchOp> rows = parse_observed_torch_ops(kObservedTorchOpsCsv);
    return rows;
}

}  // namespace tewb

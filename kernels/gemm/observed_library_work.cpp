#include "gemm/observed_library_work.h"

#include <charconv>
#include <stdexcept>
#include <string>

#include "common/fail.h"

namespace tewb::kernels::detail {

extern const char kObservedLibraryWorkCsv[];  // observed_library_work_text.cpp, generated from the .csv

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
    throw std::invalid_argument("observed_library_work.csv line " + std::to_string(number) + " \"" + std::string(line) +
                                "\": " + why);
}

Epilogue epilogue_from(std::string_view text, std::size_t number, std::string_view line) {
    for (Epilogue e : {Epilogue::None, Epilogue::Bias, Epilogue::GeluAuxBias, Epilogue::DGeluBGrad, Epilogue::BGradB}) {
        if (text == epilogue_name(e)) return e;
    }
    bad_line(number, line, "unknown epilogue (allowed: none, BIAS, GELU_AUX_BIAS, DGELU_BGRAD, BGRADB)");
}

DType operands_from(std::string_view text, std::size_t number, std::string_view line) {
    for (DType t : {DType::Float32, DType::BFloat16, DType::Float8E4M3, DType::Float8E5M2}) {
        if (text == to_string(t).data()) return t;
    }
    bad_line(number, line, "unknown operand type (allowed: float32, bfloat16, E4M3, E5M2)");
}

std::uint64_t count_from(std::string_view text, std::size_t number, std::string_view line) {
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || text.empty() || value > 16) {
        bad_line(number, line, "a count is not a whole number from 0 to 16");
    }
    return value;
}

const std::vector<ObservedGemmRow>& table() {
    static const std::vector<ObservedGemmRow> rows = parse_observed_gemm_work(kObservedLibraryWorkCsv);
    return rows;
}

}  // namespace

std::vector<ObservedGemmRow> parse_observed_gemm_work(std::string_view text) {
    std::vector<ObservedGemmRow> rows;
    std::size_t number = 0;
    while (!text.empty()) {
        const std::size_t end = text.find('\n');
        std::string_view line = text.substr(0, end);
        text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
        ++number;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty() || line.front() == '#') continue;
        const std::vector<std::string_view> f = fields_of(line);
        if (f.size() != 5) bad_line(number, line, "expected 5 fields: epilogue,operands,helper_kernels,memsets,memsets_inferred");
        ObservedGemmRow row{epilogue_from(f[0], number, line), operands_from(f[1], number, line),
                            {count_from(f[2], number, line), count_from(f[3], number, line), f[4] == "yes"}};
        if (f[4] != "yes" && f[4] != "no") bad_line(number, line, "memsets_inferred is yes or no");
        for (const ObservedGemmRow& seen : rows) {
            if (seen.epilogue == row.epilogue && seen.operands == row.operands) bad_line(number, line, "a second entry for this pair");
        }
        rows.push_back(row);
    }
    return rows;
}

std::optional<ObservedLibraryWork> observed_gemm_work(Epilogue epilogue, DType operands) {
    for (const ObservedGemmRow& row : table()) {
        if (row.epilogue == epilogue && row.operands == operands) return row.work;
    }
    return std::nullopt;
}

void note_gemm_library_work(Epilogue epilogue, DType operands) {
    if (const auto work = observed_gemm_work(epilogue, operands)) {
        note_library_work(work->helper_kernels, work->memsets);
    } else {
        note_unobserved_library_work();
    }
}

}  // namespace tewb::kernels::detail

#include "core/results/RunRecord.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>

#include "core/common/TextCheck.h"

#include <chrono>
#include <ctime>
#include <random>

#include "core/common/Choice.h"
#include "core/results/RunWords.h"

namespace tewb {

double KernelProfile::total_us() const {
    double sum = 0;
    for (const KernelTime& k : kernels) sum += k.total_us;
    return sum;
}

void mark_failed(RunRecord& record, ErrorKind kind, std::string message) {
    record.status = RunStatus::Failed;
    record.error_kind = kind;
    record.message = std::move(message);
}

std::string_view unfinished_mark(RunStatus status) {
    switch (status) {
        case RunStatus::Cancelled: return " (cancelled)";
        case RunStatus::Failed: return " (failed)";
        case RunStatus::Finished:
        case RunStatus::Running: break;
    }
    return {};
}

std::string_view emulated_format(Precision precision, ScalingKind scaling) {
    if (precision != Precision::Fp8 || !is_microscaling(scaling)) return "FP8";
    return scaling == ScalingKind::Mxfp8 ? "MXFP8" : "NVFP4";
}

std::string display_name(const RunConfig& config, bool fp8_emulated) {
    return display_name(config.name, fp8_emulated, emulated_format(config.precision, config.fp8.scaling));
}

std::string display_name(const RunRecord& record) {
    return display_name(record.config, record.execution.fp8_emulated);
}

std::string make_run_id() {
    std::random_device entropy;
    std::mt19937_64 generator((static_cast<std::uint64_t>(entropy()) << 32) ^ entropy() ^
                              static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
    static constexpr char kHex[] = "0123456789abcdef";
    std::string id(32, '0');
    for (char& c : id) {
        c = kHex[generator() & 0xf];
    }
    return id;
}

std::string utc_timestamp_now() {
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm utc{};
    gmtime_r(&now, &utc);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return text;
}

}  // namespace tewb

namespace tewb {

namespace {

bool is_utc_timestamp(const std::string& text) {
    // YYYY-MM-DDTHH:MM:SSZ, with a real calendar date and time of day.
    if (text.size() != 20) return false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char expected = "dddd-dd-ddTdd:dd:ddZ"[i];
        if (expected == 'd' ? !std::isdigit(static_cast<unsigned char>(text[i])) : text[i] != expected) return false;
    }
    const auto number = [&](std::size_t at, std::size_t length) { return std::stoi(text.substr(at, length)); };
    const int year = number(0, 4), month = number(5, 2), day = number(8, 2);
    const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (month < 1 || month > 12 || day < 1 || day > kDays[month - 1] + (month == 2 && leap ? 1 : 0)) return false;
    return number(11, 2) < 24 && number(14, 2) < 60 && number(17, 2) < 61;
}

bool is_duration(double value) {
    return std::isfinite(value) && value >= 0;
}

bool is_optional_duration(const std::optional<double>& value) {
    return !value || is_duration(*value);
}

bool is_breakdown(const std::optional<StepBreakdown>& b) {
    return !b || std::all_of(std::begin(kStepSegments), std::end(kStepSegments),
                             [&](StepSegment segment) { return is_duration(b->at(segment)); });
}

}  // namespace

std::optional<std::string> import_problem(const RunRecord& record) {
    if (record.id.empty() || record.id.size() > 64 ||
        !std::all_of(record.id.begin(), record.id.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-'; })) {
        return "$.id '" + printable_text(record.id.substr(0, 64)) + "': allowed: 1 to 64 letters, digits or '-'";
    }
    if (record.status == RunStatus::Running) {
        return "$.status 'running': a run still in progress (or whose process died) cannot be imported; allowed: "
               "finished, cancelled or failed";
    }
    if (!is_utc_timestamp(record.created_at)) {
        return "$.created_at '" + printable_text(record.created_at.substr(0, 64)) +
               "': not a UTC time; allowed: YYYY-MM-DDTHH:MM:SSZ, e.g. 2026-11-30T21:31:14Z";
    }
    if (const auto problem = name_problem(record.config.name)) {
        return "$.config.name " + *problem;
    }
    for (const ConfigProblem& problem : find_problems(record.config)) {
        if (problem.field != "name") return "$.config: " + problem.message;
    }
    const ScalingKind scaling = record.config.fp8.scaling;
    if (!record.fp8_block_scales.empty() &&
        (record.config.precision != Precision::Fp8 || !record.config.inspect_fp8 ||
         !(scaling == ScalingKind::Block || is_microscaling(scaling)))) {
        return "$.fp8_block_scales: only an inspected FP8 run of block, MXFP8 or NVFP4 scaling has block-scale histograms; "
               "this run's config says " + std::string(to_string(record.config.precision)) + ", recipe " +
               std::string(to_string(scaling)) + ", inspect " + (record.config.inspect_fp8 ? "on" : "off");
    }
    for (std::size_t i = 0; i < record.steps.size(); ++i) {
        const StepMetrics& s = record.steps[i];
        if (!is_duration(s.step_ms) || !is_duration(s.elapsed_ms) || !(s.tokens_per_s >= 0) || !is_breakdown(s.breakdown)) {
            return "$.steps[" + std::to_string(i) +
                   "]: step_ms, elapsed_ms, tokens_per_s and the breakdown's times must be finite and not negative";
        }
    }
    const RunSummary& sum = record.summary;
    if (!is_optional_duration(sum.mean_ms) || !is_optional_duration(sum.median_ms) || !is_optional_duration(sum.p90_ms) ||
        !is_optional_duration(sum.tokens_per_s) || !is_optional_duration(sum.tflops) || !is_optional_duration(sum.mfu) ||
        !is_breakdown(sum.breakdown)) {
        return "$.summary: times and rates must be finite and not negative";
    }
    if (!is_duration(record.execution.flops_per_step)) {
        return "$.execution.flops_per_step: must be finite and not negative";
    }
    if (!is_optional_duration(record.execution.fused_launches_per_step)) {
        return "$.execution.fused_launches_per_step: must be finite and not negative";
    }
    if (record.data_file) {
        const DataFileInfo& d = *record.data_file;
        if (auto problem = text_problem(d.name, 255); problem || d.name.find('/') != std::string::npos) {
            return "$.data_file.name " + problem.value_or("holds a '/'") + "; allowed: a file's name without its directory";
        }
        if (d.format == TokenFormat::Auto || d.tokens < 1 || d.val_tokens < 0 || d.val_tokens > d.tokens || d.max_token < 0) {
            return "$.data_file: a format as read (bytes, uint16, llmc), at least one token, a held-out tail within them";
        }
    }
    return std::nullopt;
}

}  // namespace tewb

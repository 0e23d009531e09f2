#include "core/results/RunRecord.h"

#include <chrono>
#include <ctime>
#include <random>

#include "core/common/Choice.h"

namespace tewb {

namespace {

constexpr NameTable kPhaseNames{std::to_array<Named<Phase>>({{"warmup", Phase::Warmup}, {"timed", Phase::Timed}})};
constexpr NameTable kStatusNames{std::to_array<Named<RunStatus>>({{"finished", RunStatus::Finished},
                                                                 {"cancelled", RunStatus::Cancelled},
                                                                 {"failed", RunStatus::Failed},
                                                                 {"running", RunStatus::Running}})};
constexpr NameTable kMemoryMetricNames{std::to_array<Named<MemoryMetric>>(
    {{"cuda_peak_allocated", MemoryMetric::CudaPeakAllocated}, {"cpu_peak_rss", MemoryMetric::CpuPeakRss}})};

}  // namespace

std::string_view to_string(Phase value) {
    return kPhaseNames.name(value);
}

std::string_view to_string(RunStatus value) {
    return kStatusNames.name(value);
}

std::string_view to_string(MemoryMetric value) {
    return kMemoryMetricNames.name(value);
}

Phase parse_phase(std::string_view what, std::string_view text) {
    return kPhaseNames.parse(what, text);
}

RunStatus parse_status(std::string_view what, std::string_view text) {
    return kStatusNames.parse(what, text);
}

MemoryMetric parse_memory_metric(std::string_view what, std::string_view text) {
    return kMemoryMetricNames.parse(what, text);
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

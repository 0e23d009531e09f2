#include "core/results/RunRecord.h"

#include <chrono>
#include <ctime>
#include <random>

namespace tewb {

std::string_view to_string(Phase value) {
    return value == Phase::Timed ? "timed" : "warmup";
}

std::string_view to_string(RunStatus value) {
    switch (value) {
        case RunStatus::Running: return "running";
        case RunStatus::Finished: return "finished";
        case RunStatus::Cancelled: return "cancelled";
        case RunStatus::Failed: return "failed";
    }
    return "failed";
}

std::string_view to_string(MemoryMetric value) {
    return value == MemoryMetric::CudaPeakAllocated ? "cuda_peak_allocated" : "cpu_peak_rss";
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

#include "core/modules/ops/Fallbacks.h"

#include <mutex>

namespace tewb {

namespace {

struct Log {
    std::mutex mutex;
    std::vector<FallbackTally> tallies;
};

Log& log() {
    static Log instance;
    return instance;
}

}  // namespace

void note_fallback(std::string_view op, std::string_view reason) {
    Log& l = log();
    const std::lock_guard<std::mutex> lock(l.mutex);
    for (FallbackTally& t : l.tallies) {
        if (t.op == op && t.reason == reason) {
            ++t.count;
            return;
        }
    }
    l.tallies.push_back({std::string(op), std::string(reason), 1});
}

void clear_fallbacks() {
    Log& l = log();
    const std::lock_guard<std::mutex> lock(l.mutex);
    l.tallies.clear();
}

std::vector<FallbackTally> fallbacks_noted() {
    Log& l = log();
    const std::lock_guard<std::mutex> lock(l.mutex);
    return l.tallies;
}

}  // namespace tewb

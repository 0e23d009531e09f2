#include "core/device/HostMemory.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace tewb {

namespace {

std::optional<std::uint64_t> meminfo_available() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    std::uint64_t kib = 0;
    std::string unit;
    while (in >> key >> kib) {
        std::getline(in, unit);
        if (key == "MemAvailable:") return kib * 1024;
    }
    return std::nullopt;
}

std::optional<std::uint64_t> read_number(const std::string& path) {
    std::ifstream in(path);
    std::string text;
    if (!(in >> text) || text == "max") return std::nullopt;
    try {
        return std::stoull(text);
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

// cgroup v2: the unified hierarchy's path of this process, from /proc/self/cgroup ("0::/user.slice/...").
std::optional<std::uint64_t> cgroup_headroom() {
    std::ifstream in("/proc/self/cgroup");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("0::", 0) != 0) continue;
        const std::string dir = "/sys/fs/cgroup" + line.substr(3);
        const auto limit = read_number(dir + "/memory.max");
        const auto used = read_number(dir + "/memory.current");
        if (limit && used) return *limit > *used ? *limit - *used : 0;
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::uint64_t> host_memory_available() {
    const auto available = meminfo_available();
    const auto headroom = cgroup_headroom();
    if (available && headroom) return std::min(*available, *headroom);
    return available ? available : headroom;
}

}  // namespace tewb

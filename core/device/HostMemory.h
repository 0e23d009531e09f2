#pragma once

#include <cstdint>
#include <optional>

namespace tewb {

// Memory a new allocation on the host can use now: MemAvailable from /proc/meminfo, lowered to what the
// process's cgroup (memory.max) still allows. Nothing when neither can be read.
std::optional<std::uint64_t> host_memory_available();

}  // namespace tewb

#include "common/fail.h"

#include <atomic>
#include <cstdint>
#include <string>

#include "tewb_kernels/kernel_error.h"
#include "tewb_kernels/launch_count.h"

namespace tewb::kernels {

namespace {

std::atomic<std::uint64_t> g_launches{0};
std::atomic<std::uint64_t> g_helpers{0};
std::atomic<std::uint64_t> g_memsets{0};
std::atomic<std::uint64_t> g_unobserved{0};

}  // namespace

std::uint64_t launch_count() {
    return g_launches.load(std::memory_order_relaxed);
}

LaunchTally launch_tally() {
    return {g_launches.load(std::memory_order_relaxed), g_helpers.load(std::memory_order_relaxed),
            g_memsets.load(std::memory_order_relaxed), g_unobserved.load(std::memory_order_relaxed)};
}

}  // namespace tewb::kernels

namespace tewb::kernels::detail {

void fail(std::string_view call, std::string_view what) {
    throw KernelError(std::string(call) + ": " + std::string(what));
}

void note_launch() {
    g_launches.fetch_add(1, std::memory_order_relaxed);
}

void note_memset() {
    g_memsets.fetch_add(1, std::memory_order_relaxed);
}

void note_library_work(std::uint64_t helpers, std::uint64_t memsets) {
    g_helpers.fetch_add(helpers, std::memory_order_relaxed);
    g_memsets.fetch_add(memsets, std::memory_order_relaxed);
}

void note_unobserved_library_work() {
    g_unobserved.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace tewb::kernels::detail

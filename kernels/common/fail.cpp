#include "common/fail.h"

#include <atomic>
#include <cstdint>
#include <string>

#include "tewb_kernels/kernel_error.h"
#include "tewb_kernels/launch_count.h"

namespace tewb::kernels {

namespace {

std::atomic<std::uint64_t> g_launches{0};

}  // namespace

std::uint64_t launch_count() {
    return g_launches.load(std::memory_order_relaxed);
}

}  // namespace tewb::kernels

namespace tewb::kernels::detail {

void fail(std::string_view call, std::string_view what) {
    throw KernelError(std::string(call) + ": " + std::string(what));
}

void note_launch() {
    g_launches.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace tewb::kernels::detail

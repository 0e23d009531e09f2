#pragma once

#include <cstdint>
#include <string_view>

// What every entry point shares, on the device and on the host: the error and the launch count. No CUDA
// here, so the host implementations build without a toolkit.
namespace tewb::kernels::detail {

[[noreturn]] void fail(std::string_view call, std::string_view what);
// Counts one launch (launch_count.h): a CUDA kernel, a cuBLASLt matmul, or the host implementation's
// stand-in for one, so that a host run counts what the same call launches on a GPU.
void note_launch();
// A device memset this library issues itself (LaunchTally::memsets; the host implementation counts the same).
void note_memset();
// What a library ran beside one call as observed on a GPU (LaunchTally::helpers, memsets), or that no GPU run
// observed it (LaunchTally::unobserved).
void note_library_work(std::uint64_t helpers, std::uint64_t memsets);
void note_unobserved_library_work();

}  // namespace tewb::kernels::detail

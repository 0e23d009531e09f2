#pragma once

#include <string_view>

// What every entry point shares, on the device and on the host: the error and the launch count. No CUDA
// here, so the host implementations build without a toolkit.
namespace tewb::kernels::detail {

[[noreturn]] void fail(std::string_view call, std::string_view what);
// Counts one launch (launch_count.h): a CUDA kernel, a cuBLASLt matmul, or the host implementation's
// stand-in for one, so that a host run counts what the same call launches on a GPU.
void note_launch();

}  // namespace tewb::kernels::detail

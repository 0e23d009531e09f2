#pragma once

#include <optional>
#include <string_view>

namespace tewb {

// What a launch is on the GPU: an op's own kernel, a kernel a library runs beside it (cuBLASLt's epilogue
// reductions, cuDNN's attention helpers), a memset, or a copy between host and device. The launch ledger's rows and
// a CUDA profile's rows say which.
enum class LaunchWork { Kernel, Helper, Memset, Copy };

const char* to_string(LaunchWork work);  // "kernel", "helper", "memset", "copy"
std::optional<LaunchWork> launch_work_from(std::string_view text);

}  // namespace tewb

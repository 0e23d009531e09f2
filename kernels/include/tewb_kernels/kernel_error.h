#pragma once

#include <stdexcept>
#include <string>

namespace tewb::kernels {

// Every failure of an entry point: bad arguments (found on the host before any launch) or a CUDA /
// cuBLASLt status. The message starts with the entry point's name.
class KernelError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace tewb::kernels

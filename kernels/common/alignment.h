#pragma once

// The one test every vectorised path makes of its pointers, on the device and in the host twins that follow its
// launch rules: whether p may be read or written `bytes` at a time.
#include <cstddef>
#include <cstdint>

#include "tewb_kernels/host_device.h"

namespace tewb::kernels::detail {

TEWB_HOST_DEVICE inline bool aligned(const void* p, std::size_t bytes) {
    return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

}  // namespace tewb::kernels::detail

#pragma once

#include <string>

#include "core/device/DeviceInfo.h"
#include "core/config/RunConfig.h"

namespace tewb {

// Whether this machine can run a choice and, when it cannot, why (one line naming the choice, the reason
// and what is allowed). resolve() refuses the same requests with the same words, so the GUI's disabled
// options and the CLI's errors agree.
struct Availability {
    bool available = true;
    std::string reason;
};

Availability device_availability(DeviceKind kind, const DeviceInfo& device);
// `kind` may be Auto: it is resolved the way resolve() would.
Availability precision_availability(Precision precision, Backend backend, DeviceKind kind, const DeviceInfo& device);
// Which te implementation (--te-impl) can run here: Fused on a CUDA device below compute capability 8.0 cannot
// (the fused kernels need 8.0; on the CPU it runs the host kernels). `kind` may be Auto. A build without the
// CUDA kernels is not known here: the trainer refuses that with its own ConfigError.
Availability te_impl_availability(TeImpl impl, DeviceKind kind, const DeviceInfo& device);

}  // namespace tewb

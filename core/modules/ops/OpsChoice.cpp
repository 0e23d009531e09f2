#include "core/modules/ops/OpsChoice.h"

#include <optional>
#include <string>

#include "core/common/Error.h"
#include "core/device/Capability.h"
#include "core/modules/ops/FusedOps.h"
#include "core/modules/ops/ReferenceOps.h"

#ifdef TEWB_FUSED_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

namespace tewb {

namespace {

thread_local const TeOps* t_ops_in_force = nullptr;

#ifdef TEWB_FUSED_CUDA
constexpr bool kFusedCudaBuilt = true;
#else
constexpr bool kFusedCudaBuilt = false;
#endif

}  // namespace

const TeOps& ops_of_kind(OpsKind kind) {
    switch (kind) {
        case OpsKind::FusedHost: return fused_host_ops();
        case OpsKind::FusedCuda:
#ifdef TEWB_FUSED_CUDA
            return fused_cuda_ops();
#else
            throw ConfigError("the fused CUDA ops: this build has no CUDA kernels (configured without nvcc or with a CPU "
                              "LibTorch)");
#endif
        case OpsKind::Reference: break;
    }
    return reference_ops();
}

const TeOps& select_ops(const c10::Device& device, TeImpl impl) {
    std::optional<ComputeCapability> cc;
#ifdef TEWB_FUSED_CUDA
    if (device.is_cuda()) {
        const int index = device.has_index() ? device.index() : at::cuda::current_device();
        const cudaDeviceProp* properties = at::cuda::getDeviceProperties(index);
        cc = ComputeCapability{properties->major, properties->minor};
    }
#endif
    return ops_of_kind(choose_ops(impl, kFusedCudaBuilt, device.is_cuda(), cc));
}

const TeOps& select_ops(const c10::Device& device) {
    return select_ops(device, te_impl_from_environment());
}

OpsScope::OpsScope(const TeOps& ops) : previous_(t_ops_in_force) {
    t_ops_in_force = &ops;
}

OpsScope::~OpsScope() {
    t_ops_in_force = previous_;
}

const TeOps& ops_in_force(const c10::Device& device) {
    return t_ops_in_force != nullptr ? *t_ops_in_force : select_ops(device);
}

}  // namespace tewb

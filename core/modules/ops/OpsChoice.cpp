#include "core/modules/ops/OpsChoice.h"

#include <string>

#include "core/common/Error.h"
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

std::string_view to_string(OpsKind kind) {
    switch (kind) {
        case OpsKind::Reference: return "reference";
        case OpsKind::FusedHost: return "fused-host";
        case OpsKind::FusedCuda: return "fused-cuda";
    }
    return "unknown";
}

OpsKind choose_ops(TeImpl impl, bool fused_cuda_built, bool cuda_device, int cc_major) {
    const bool cuda_fits = fused_cuda_built && cuda_device && cc_major >= 8;
    switch (impl) {
        case TeImpl::Reference: return OpsKind::Reference;
        case TeImpl::Auto: return cuda_fits ? OpsKind::FusedCuda : OpsKind::Reference;
        case TeImpl::Fused:
            if (!cuda_device) return OpsKind::FusedHost;
            if (!fused_cuda_built) {
                throw ConfigError("--te-impl fused: this build has no CUDA kernels (configured without nvcc or with a CPU "
                                  "LibTorch); allowed here: auto, reference, or fused on the CPU");
            }
            if (cc_major < 8) {
                throw ConfigError("--te-impl fused: the fused kernels need compute capability 8.0 or newer, this GPU has " +
                                  std::to_string(cc_major) + ".x; allowed here: auto, reference, or fused on the CPU");
            }
            return OpsKind::FusedCuda;
    }
    return OpsKind::Reference;
}

const TeOps& select_ops(const c10::Device& device, TeImpl impl) {
    int cc_major = 0;
#ifdef TEWB_FUSED_CUDA
    if (device.is_cuda()) {
        const int index = device.has_index() ? device.index() : at::cuda::current_device();
        cc_major = at::cuda::getDeviceProperties(index)->major;
    }
#endif
    switch (choose_ops(impl, kFusedCudaBuilt, device.is_cuda(), cc_major)) {
        case OpsKind::FusedHost: return fused_host_ops();
        case OpsKind::FusedCuda:
#ifdef TEWB_FUSED_CUDA
            return fused_cuda_ops();
#else
            break;  // choose_ops never picks it in this build
#endif
        case OpsKind::Reference: break;
    }
    return reference_ops();
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

bool fp8_gemms_emulated(const TeOps& ops, ScalingKind scaling) {
    return ops.kind() != OpsKind::FusedCuda || (scaling == ScalingKind::Block && !ops.block_gemms_native());
}

}  // namespace tewb

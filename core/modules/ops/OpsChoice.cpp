#include "core/modules/ops/OpsChoice.h"

#include <cstdlib>
#include <string_view>

#include "core/common/Choice.h"
#include "core/modules/ops/ReferenceOps.h"

#ifdef TEWB_FUSED_OPS
#include <ATen/cuda/CUDAContext.h>

#include "core/modules/ops/FusedOps.h"
#endif

namespace tewb {

namespace {

constexpr NameTable kImplNames{std::to_array<Named<TeImpl>>({{"auto", TeImpl::Auto}, {"reference", TeImpl::Reference}})};

thread_local const TeOps* t_ops_in_force = nullptr;

}  // namespace

TeImpl te_impl_from_environment() {
    const char* value = std::getenv("TEWB_TE_IMPL");
    if (value == nullptr || *value == '\0') {
        return TeImpl::Auto;
    }
    return kImplNames.parse("environment variable TEWB_TE_IMPL", value);
}

bool fused_ops_apply(TeImpl impl, bool fused_built, bool cuda_device, int cc_major) {
    return impl == TeImpl::Auto && fused_built && cuda_device && cc_major >= 8;
}

const TeOps& select_ops(const c10::Device& device, TeImpl impl) {
#ifdef TEWB_FUSED_OPS
    if (device.is_cuda()) {
        const int index = device.has_index() ? device.index() : at::cuda::current_device();
        if (fused_ops_apply(impl, true, true, at::cuda::getDeviceProperties(index)->major)) {
            return fused_ops();
        }
    }
#else
    (void)device;
    (void)impl;
#endif
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
    return ops.is_reference() || (scaling == ScalingKind::Block && !ops.block_gemms_native());
}

}  // namespace tewb

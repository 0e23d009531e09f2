#include "core/modules/ops/FusedOps.h"

#include <ATen/ops/empty.h>

#include "core/modules/ops/FusedOpsImpl.h"
#include "core/modules/ops/KernelTypes.h"

#ifdef TEWB_FUSED_CUDA
#include <c10/cuda/CUDAFunctions.h>

#include "tewb_kernels/gemm.h"
#endif

namespace tewb {

namespace fused_ops {

at::Tensor byte_buffer(std::size_t bytes, const at::Tensor& like) {
    return at::empty({static_cast<std::int64_t>(bytes)}, like.options().dtype(at::kByte));
}

std::uint64_t bytes_of(const std::vector<at::Tensor>& tensors) {
    std::uint64_t total = 0;
    for (const at::Tensor& t : tensors) {
        if (t.defined()) total += static_cast<std::uint64_t>(t.numel()) * static_cast<std::uint64_t>(t.element_size());
    }
    return total;
}

bool FusedOps::block_gemms_native() const {
#ifdef TEWB_FUSED_CUDA
    if (kind_ == OpsKind::FusedCuda) return kernels::block_gemm_supported(c10::cuda::current_device());
#endif
    return false;  // the host GEMM computes block-scaled products in float32: emulated
}

// The tensor is where this implementation's kernels run: host memory for the host kernels, a CUDA
// device for the CUDA ones.
Misfit FusedOps::device_misfit(const at::Tensor& t, const char* what) const {
    if (on_host() ? t.is_cpu() : t.is_cuda()) return std::nullopt;
    return std::string(what) + " is on " + t.device().str() + " (the " + (on_host() ? "host" : "CUDA") + " kernels take " +
           (on_host() ? "cpu" : "cuda") + " tensors)";
}

Misfit FusedOps::matrix_misfit_any_dtype(const at::Tensor& t, const char* what) const {
    if (Misfit m = device_misfit(t, what)) return m;
    if (t.dim() != 2) return std::string(what) + " is not 2-D";
    if (!t.is_contiguous()) return std::string(what) + " is not contiguous";
    if (t.numel() == 0) return std::string(what) + " is empty";
    return std::nullopt;
}

// A 2-D, row-major, non-empty float32 or bfloat16 tensor on this implementation's device.
Misfit FusedOps::matrix_misfit(const at::Tensor& t, const char* what) const {
    if (Misfit m = matrix_misfit_any_dtype(t, what)) return m;
    if (!float_or_bf16(t.scalar_type())) {
        return std::string(what) + " is " + c10::toString(t.scalar_type()) + " (the kernels take float32, bfloat16)";
    }
    return std::nullopt;
}

Misfit FusedOps::params_misfit(const at::Tensor& gamma, const at::Tensor& beta, const at::Tensor& x) const {
    if (Misfit m = device_misfit(gamma, "gamma")) return m;
    const bool fits = gamma.dim() == 1 && gamma.is_contiguous() && beta.is_contiguous() && gamma.size(0) == x.size(1) &&
                      beta.sizes() == gamma.sizes() && beta.scalar_type() == gamma.scalar_type() &&
                      float_or_bf16(gamma.scalar_type()) && gamma.device() == x.device();
    if (!fits)
        return std::string("gamma and beta are not contiguous [hidden] float32 or bfloat16 vectors of one dtype on x's device");
    return std::nullopt;
}

bool FusedOps::stats_fit(const at::Tensor& s, const at::Tensor& x) const {
    return !device_misfit(s, "s") && s.is_contiguous() && s.scalar_type() == at::kFloat && s.numel() == x.size(0) &&
           s.device() == x.device();
}

// Delayed scaling into a kernel that writes FP8 itself (the staging entry takes the amax); current and
// block scaling, a calibrating first step and inspection compose the step from the primitives instead.
bool FusedOps::delayed_kernel_cast(const at::Tensor& x, const Fp8Quantizer& quantizer) const {
    const Fp8Context& context = *quantizer.context;
    return !matrix_misfit(x, "x") && context.recipe().scaling == ScalingKind::Delayed && !context.inspect() &&
           !context.calibrating(quantizer.pass);
}

// Current scaling, or delayed scaling's calibrating step, into a cast kernel: the scale comes from x's own amax first
// (fresh_scale), then the kernel casts with it as delayed scaling's does. Inspection composes the step from the
// primitives instead.
bool FusedOps::fresh_scale_cast(const at::Tensor& x, const Fp8Quantizer& quantizer) const {
    const Fp8Context& context = *quantizer.context;
    const ScalingKind scaling = context.recipe().scaling;
    return !matrix_misfit(x, "x") && !context.inspect() &&
           (scaling == ScalingKind::Current || (scaling == ScalingKind::Delayed && context.calibrating(quantizer.pass)));
}

// Two high-precision operands the GEMM takes as they are stored (same dtype, row-major, one device).
bool FusedOps::hp_operands(const at::Tensor& a, const at::Tensor& b, bool same_k) const {
    return !matrix_misfit(a, "a") && !matrix_misfit(b, "b") && a.scalar_type() == b.scalar_type() && a.device() == b.device() &&
           (!same_k || a.size(1) == b.size(1));
}

// The slot's scale_inv as it is (the recipe kernel wrote it): no reciprocal launched per cast. Consumers
// after the pass's update take it from Fp8Tensor::kept_past_update().
void FusedOps::hand_out_live_scale_inv(Fp8Tensor& q, const Fp8Quantizer& quantizer) {
    const Fp8Context::LiveScaleInv live = quantizer.context->live_scale_inv(quantizer.pass, quantizer.slot);
    q.scale_inv = live.now;
    q.scale_inv_after_update = live.after_update;
}

Fp8Tensor FusedOps::empty_fp8(const at::Tensor& x, const Fp8Quantizer& quantizer) {
    Fp8Tensor q;
    q.dtype = quantizer.dtype();
    q.data = at::empty(x.sizes(), x.options().dtype(to_scalar_type(q.dtype)));
    q.transposed = at::empty({x.size(1), x.size(0)}, q.data.options());
    return q;
}

Fp8GradWithBias FusedOps::empty_grad_with_bias(const at::Tensor& like, const Fp8Quantizer& quantizer) {
    Fp8GradWithBias r;
    r.grad = empty_fp8(like, quantizer);
    r.bias_grad = at::empty({like.size(1)}, like.options().dtype(at::kFloat));
    return r;
}

// The staging entry of the slot's amax history (a view into the context's state): a cast kernel combines
// its input's amax into it.
at::Tensor FusedOps::staging_entry(const Fp8Quantizer& quantizer) {
    return quantizer.context->history(quantizer.pass).select(0, quantizer.slot).select(0, 0);
}

kernels::Tensor FusedOps::fp8_tensor(Fp8Tensor& q, const Fp8Quantizer& quantizer) {
    Fp8Context& context = *quantizer.context;
    kernels::Tensor out;
    out.data = q.data.data_ptr();
    out.dtype = kernels::fp8_dtype(q.dtype);
    out.rows = static_cast<std::size_t>(q.data.size(0));
    out.cols = static_cast<std::size_t>(q.data.size(1));
    out.transposed = q.transposed.defined() ? q.transposed.data_ptr() : nullptr;
    // The slot's live scale and staging entry: views into the context's state, valid for the launch.
    out.scale = context.scale(quantizer.pass, quantizer.slot).data_ptr<float>();
    out.amax = staging_entry(quantizer).data_ptr<float>();
    return out;
}

}  // namespace fused_ops

const TeOps& fused_host_ops() {
    static const fused_ops::FusedOps ops(OpsKind::FusedHost);
    return ops;
}

#ifdef TEWB_FUSED_CUDA
const TeOps& fused_cuda_ops() {
    static const fused_ops::FusedOps ops(OpsKind::FusedCuda);
    return ops;
}
#endif

}  // namespace tewb

// The fused ops' rotary embeddings (FusedOpsImpl.h): one launch of kernels/attention's kernel, forward or inverse.
#include <string>

#include <ATen/ops/empty_like.h>

#include "core/modules/ops/FusedOpsImpl.h"
#include "core/modules/ops/KernelTypes.h"
#include "tewb_kernels/rotary.h"

namespace tewb::fused_ops {

namespace {

// t [batch, seq, heads, head_dim] as the kernel's matrix [batch * seq, heads * head_dim].
kernels::Tensor heads_matrix(const at::Tensor& t) {
    return kernels::input(t.data_ptr(), kernel_dtype(t.scalar_type()), static_cast<std::size_t>(t.size(0) * t.size(1)),
                          static_cast<std::size_t>(t.size(2) * t.size(3)));
}

// t [batch, seq, heads, head_dim] (contiguous) as the matrix [batch * seq, heads * head_dim] a cast reads.
at::Tensor heads_rows(const at::Tensor& t) {
    return t.view({t.size(0) * t.size(1), t.size(2) * t.size(3)});
}

Misfit table_misfit(const at::Tensor& t, const char* what, const at::Tensor& x) {
    const std::int64_t half = x.size(3) / 2;
    if (t.dim() != 2 || t.scalar_type() != at::kFloat || !t.is_contiguous() || t.size(0) < x.size(1) || t.size(1) != half) {
        return std::string(what) + " is not a contiguous float32 [at least seq, head_dim / 2] table";
    }
    if (t.device() != x.device()) return std::string(what) + " is on " + t.device().str() + ", x on " + x.device().str();
    return std::nullopt;
}

}  // namespace

Misfit FusedOps::rotary_misfit(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, std::int64_t rotated_heads) const {
    Misfit m = device_misfit(x, "x");
    if (!m && x.dim() != 4) m = "x is not [batch, seq, heads, head_dim]";
    if (!m && !x.is_contiguous()) m = "x is not contiguous";
    if (!m && x.numel() == 0) m = "x is empty";
    if (!m && !float_or_bf16(x.scalar_type())) {
        m = "x is " + std::string(c10::toString(x.scalar_type())) + " (the kernels take float32, bfloat16)";
    }
    if (!m && x.size(3) % 2 != 0) m = "head_dim is odd";
    if (!m && (rotated_heads < 0 || rotated_heads > x.size(2))) m = "rotated_heads is outside 0 .. heads";
    if (!m) m = table_misfit(cos, "cos", x);
    if (!m) m = table_misfit(sin, "sin", x);
    return m;
}

at::Tensor FusedOps::rotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, std::int64_t rotated_heads,
                            bool inverse) const {
    if (Misfit m = rotary_misfit(x, cos, sin, rotated_heads)) {
        return fall_back("rotary", *m, [&] { return TeOps::rotary(x, cos, sin, rotated_heads, inverse); });
    }
    at::Tensor y = at::empty_like(x);
    const kernels::RotaryHeads heads{static_cast<std::size_t>(x.size(1)), static_cast<std::size_t>(x.size(2)),
                                     static_cast<std::size_t>(rotated_heads), inverse};
    // The rows of the tables this call reads, for the ledger's bytes.
    const at::Tensor cos_read = cos.narrow(0, 0, x.size(1));
    const at::Tensor sin_read = sin.narrow(0, 0, x.size(1));
    TEWB_KERNEL(x, (Tensors{x, cos_read, sin_read}), Tensors{y}, rotary, heads_matrix(x), kernel_tensor(cos), kernel_tensor(sin),
                heads, heads_matrix(y));
    return y;
}

// The rotation writing, for the cast that follows where the kernel takes x: its output's FP8 scale (current scaling, a
// calibrating step: rotary_current_scale), or the cast itself with its transposed copy and amax (delayed scaling:
// rotary_quantize); otherwise rotary alone (its own fallback, if any) and neither.
TeOps::RotaryHandOver FusedOps::rotary_handing_over(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                                                    std::int64_t rotated_heads, bool inverse, const Fp8Quantizer& quantizer) const {
    const bool fits = !rotary_misfit(x, cos, sin, rotated_heads);
    const bool fresh = fits && fresh_scale_cast(heads_rows(x), quantizer);
    const bool delayed = fits && !fresh && delayed_kernel_cast(heads_rows(x), quantizer);
    if (!fresh && !delayed) return {rotary(x, cos, sin, rotated_heads, inverse), at::Tensor(), std::nullopt};
    at::Tensor y = at::empty_like(x);
    const kernels::RotaryHeads heads{static_cast<std::size_t>(x.size(1)), static_cast<std::size_t>(x.size(2)),
                                     static_cast<std::size_t>(rotated_heads), inverse};
    const at::Tensor cos_read = cos.narrow(0, 0, x.size(1));
    const at::Tensor sin_read = sin.narrow(0, 0, x.size(1));
    if (delayed) {
        Fp8Tensor cast = empty_fp8(heads_rows(x), quantizer);
        TEWB_KERNEL(x, (Tensors{x, cos_read, sin_read}), (Tensors{y, cast.data, cast.transposed}), rotary_quantize,
                    heads_matrix(x), kernel_tensor(cos), kernel_tensor(sin), heads, heads_matrix(y), fp8_tensor(cast, quantizer));
        hand_out_live_scale_inv(cast, quantizer);
        return {y, at::Tensor(), std::move(cast)};
    }
    const FreshScale f = fresh_scale_item(heads_rows(y), quantizer);
    TEWB_KERNEL(x, (Tensors{x, cos_read, sin_read, f.slot_amax}), (Tensors{y, f.scale, f.own_scale_inv, f.slot_amax}),
                rotary_current_scale, heads_matrix(x), kernel_tensor(cos), kernel_tensor(sin), heads, heads_matrix(y),
                fresh_scale_target(f));
    return {y, f.own_scale_inv, std::nullopt};
}

}  // namespace tewb::fused_ops

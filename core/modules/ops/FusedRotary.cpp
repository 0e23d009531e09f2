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

Misfit table_misfit(const at::Tensor& t, const char* what, const at::Tensor& x) {
    const std::int64_t half = x.size(3) / 2;
    if (t.dim() != 2 || t.scalar_type() != at::kFloat || !t.is_contiguous() || t.size(0) < x.size(1) || t.size(1) != half) {
        return std::string(what) + " is not a contiguous float32 [at least seq, head_dim / 2] table";
    }
    if (t.device() != x.device()) return std::string(what) + " is on " + t.device().str() + ", x on " + x.device().str();
    return std::nullopt;
}

}  // namespace

at::Tensor FusedOps::rotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, std::int64_t rotated_heads,
                            bool inverse) const {
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
    if (m) return fall_back("rotary", *m, [&] { return TeOps::rotary(x, cos, sin, rotated_heads, inverse); });
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

}  // namespace tewb::fused_ops

// The reference numerics of the rotary position embeddings (TeOps.h): LibTorch ops with float32 math, the result
// in x's dtype. The fused ops' kernel (kernels/attention) is checked against this.

#include "core/modules/ops/TeOps.h"

#include <ATen/ops/cat.h>

namespace tewb {

at::Tensor TeOps::rotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, std::int64_t rotated_heads,
                         bool inverse) const {
    const std::int64_t seq = x.size(1);
    const std::int64_t half = x.size(3) / 2;
    // [seq, half] → [1, seq, 1, half], broadcast over batch and heads.
    const at::Tensor c = cos.narrow(0, 0, seq).to(at::kFloat).unsqueeze(0).unsqueeze(2);
    const at::Tensor s = (inverse ? -sin : sin).narrow(0, 0, seq).to(at::kFloat).unsqueeze(0).unsqueeze(2);
    const at::Tensor rotated = x.narrow(2, 0, rotated_heads).to(at::kFloat);
    const at::Tensor a = rotated.narrow(3, 0, half);
    const at::Tensor b = rotated.narrow(3, half, half);
    const at::Tensor out = at::cat({a * c - b * s, b * c + a * s}, 3).to(x.scalar_type());
    if (rotated_heads == x.size(2)) return out;
    return at::cat({out, x.narrow(2, rotated_heads, x.size(2) - rotated_heads)}, 2);
}

TeOps::RotaryHandOver TeOps::rotary_handing_over(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                                                 std::int64_t rotated_heads, bool inverse, const Fp8Quantizer&) const {
    return {rotary(x, cos, sin, rotated_heads, inverse), at::Tensor(), std::nullopt};
}

}  // namespace tewb

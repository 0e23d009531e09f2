// The reference numerics of the Llama block's primitives (TeOps.h): LibTorch ops with float32 math, results in
// the operands' dtypes. The fused ops' kernels (kernels/normalization/rms_norm.cu, kernels/activation/swiglu.cu)
// are checked against these.

#include "core/modules/ops/TeOps.h"

#include <ATen/ops/cat.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/sum.h>

namespace tewb {

namespace {

at::Tensor f32(const at::Tensor& t) { return t.to(at::kFloat); }

}  // namespace

RmsNormResult TeOps::rms_norm_forward(const at::Tensor& x, const at::Tensor& gamma, double eps, at::ScalarType out_dtype) const {
    const at::Tensor x32 = f32(x);
    const at::Tensor rstd = at::rsqrt(x32.pow(2).mean({-1}, /*keepdim=*/true) + eps);
    return {(x32 * rstd * f32(gamma)).to(out_dtype), rstd.reshape({-1})};
}

RmsNormGrads TeOps::rms_norm_backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd,
                                      const at::Tensor& gamma) const {
    const at::Tensor r = rstd.reshape({-1, 1});
    const at::Tensor xhat = f32(x) * r;
    const at::Tensor dy32 = f32(dy);
    const at::Tensor g = dy32 * f32(gamma);
    const at::Tensor dx = r * (g - xhat * (g * xhat).mean({-1}, /*keepdim=*/true));
    return {dx.to(x.scalar_type()), at::sum(dy32 * xhat, {0}).to(gamma.scalar_type())};
}

RmsNormGrads TeOps::rms_norm_backward_add(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd, const at::Tensor& gamma,
                                          const at::Tensor& dresidual) const {
    RmsNormGrads g = rms_norm_backward(dy, x, rstd, gamma);
    g.dx = g.dx + dresidual.to(g.dx.scalar_type());
    return g;
}

Fp8Tensor TeOps::rms_norm_quantize(const at::Tensor& x, const at::Tensor& gamma, double eps, at::ScalarType out_dtype,
                                   const Fp8Quantizer& quantizer, bool keep_output, RmsNormResult& rn) const {
    rn = rms_norm_forward(x, gamma, eps, out_dtype);
    Fp8Tensor q = quantize(rn.out, quantizer, /*with_transpose=*/true);
    if (!keep_output) rn.out = at::Tensor();
    return q;
}

at::Tensor TeOps::swiglu_forward(const at::Tensor& in) const {
    const std::int64_t cols = in.size(-1) / 2;
    const at::Tensor gate = f32(in.narrow(-1, 0, cols));
    const at::Tensor up = f32(in.narrow(-1, cols, cols));
    return (gate * at::sigmoid(gate) * up).to(in.scalar_type());
}

at::Tensor TeOps::swiglu_backward(const at::Tensor& dy, const at::Tensor& in) const {
    const std::int64_t cols = in.size(-1) / 2;
    const at::Tensor gate = f32(in.narrow(-1, 0, cols));
    const at::Tensor up = f32(in.narrow(-1, cols, cols));
    const at::Tensor dy32 = f32(dy);
    const at::Tensor s = at::sigmoid(gate);
    const at::Tensor dgate = dy32 * up * s * (1 + gate * (1 - s));
    const at::Tensor dup = dy32 * gate * s;
    return at::cat({dgate, dup}, -1).to(in.scalar_type());
}

Fp8Tensor TeOps::swiglu_quantize(const at::Tensor& in, const Fp8Quantizer& quantizer) const {
    return quantize(swiglu_forward(in), quantizer, /*with_transpose=*/true);
}

Fp8Tensor TeOps::swiglu_backward_quantize(const at::Tensor& dy, const at::Tensor& in, const Fp8Quantizer& quantizer) const {
    return quantize(swiglu_backward(dy, in), quantizer, /*with_transpose=*/true);
}

}  // namespace tewb

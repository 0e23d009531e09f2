#include "core/modules/ops/TeOps.h"

#include <ATen/ops/sum.h>

namespace tewb {

Fp8Tensor TeOps::layer_norm_quantize(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, double eps,
                                     at::ScalarType out_dtype, const Fp8Quantizer& quantizer, bool keep_output,
                                     LayerNormResult& ln) const {
    ln = layer_norm_forward(x, gamma, beta, eps, out_dtype);
    Fp8Tensor q = quantize(ln.out, quantizer, /*with_transpose=*/true);
    if (!keep_output) ln.out = at::Tensor();
    return q;
}

Fp8Tensor TeOps::gelu_quantize(const at::Tensor& x, const Fp8Quantizer& quantizer) const {
    return quantize(gelu_forward(x), quantizer, /*with_transpose=*/true);
}

LayerNormGrads TeOps::layer_norm_backward_add(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
                                              const at::Tensor& gamma, const at::Tensor& dresidual) const {
    LayerNormGrads g = layer_norm_backward(dy, x, mean, rstd, gamma);
    g.dx = g.dx + dresidual.to(g.dx.scalar_type());
    return g;
}

at::Tensor TeOps::gemm_add(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
                           at::ScalarType product_dtype, const at::Tensor& residual) const {
    return residual + gemm(a, b, bias, product_dtype);
}

at::Tensor TeOps::fp8_gemm_add(const at::Tensor& a, const at::Tensor& a_scale_inv, const at::Tensor& b, const at::Tensor& b_scale_inv,
                               const std::optional<at::Tensor>& bias, at::ScalarType product_dtype, Accumulation accumulation,
                               const at::Tensor& residual) const {
    return residual + fp8_gemm(a, a_scale_inv, b, b_scale_inv, bias, product_dtype, accumulation);
}

std::vector<Fp8Tensor> TeOps::quantize_weights(const std::vector<WeightCast>& casts) const {
    std::vector<Fp8Tensor> out;
    out.reserve(casts.size());
    for (const WeightCast& cast : casts) out.push_back(quantize(cast.weight, cast.quantizer, /*with_transpose=*/true));
    return out;
}

Fp8GradWithBias TeOps::gelu_backward_quantize(const at::Tensor& dy, const at::Tensor& x, const Fp8Quantizer& quantizer) const {
    const at::Tensor dx = gelu_backward(dy, x);
    return {quantize(dx, quantizer, /*with_transpose=*/true), bias_grad(dx)};
}

Fp8GradWithBias TeOps::quantize_dbias(const at::Tensor& dy, const Fp8Quantizer& quantizer) const {
    return {quantize(dy, quantizer, /*with_transpose=*/true), bias_grad(dy)};
}

GeluGemmResult TeOps::gemm_gelu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                at::ScalarType out_dtype) const {
    GeluGemmResult r;
    r.pre = gemm(x, weight, bias.defined() ? std::optional<at::Tensor>(bias) : std::nullopt, out_dtype);
    r.activation = gelu_forward(r.pre);
    return r;
}

GradWithBias TeOps::gemm_dgelu(const at::Tensor& dy, const at::Tensor& weight, const at::Tensor& pre,
                               at::ScalarType out_dtype) const {
    const at::Tensor d_act = gemm(dy, weight.t(), std::nullopt, out_dtype);
    const at::Tensor grad = gelu_backward(d_act, pre);
    return {grad, bias_grad(grad).to(out_dtype)};
}

GradWithBias TeOps::wgrad_gemm(const at::Tensor& dy, const at::Tensor& x, at::ScalarType out_dtype, bool with_bias) const {
    GradWithBias r;
    r.grad = gemm(dy.t(), x.t(), std::nullopt, out_dtype);
    if (with_bias) r.bias_grad = bias_grad(dy).to(out_dtype);
    return r;
}

at::Tensor TeOps::bias_grad(const at::Tensor& dy) const {
    return at::sum(dy, {0}, /*keepdim=*/false, at::kFloat);
}

}  // namespace tewb

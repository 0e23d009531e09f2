#include "core/modules/ops/TeOps.h"

#include <limits>

#include <ATen/ops/_foreach_copy.h>
#include <ATen/ops/_fused_adamw.h>
#include <ATen/ops/embedding.h>
#include <ATen/ops/full.h>
#include <ATen/ops/log_softmax.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>

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

at::Tensor TeOps::mx_gemm(const MxOperand& a, const MxOperand& b, const std::optional<at::Tensor>& bias,
                          at::ScalarType out_dtype) const {
    const auto quantized = [](const MxOperand& o) {
        return MxQuantized{o.format, o.data.dim() == 2 ? o.data : o.data.reshape({-1, o.data.size(-1)}), o.block_scale,
                           o.tensor_scale_inv, o.dtype};
    };
    at::Tensor out = mx_gemm_reference(quantized(a), quantized(b));
    if (bias) out = out + bias->to(at::kFloat);
    return out.to(out_dtype);
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
    return {grad, bias_grad(grad)};
}

std::optional<LayerNormGradsWithCast> TeOps::layer_norm_backward_cast(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                                                      const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                                                      at::ScalarType, bool) const {
    return std::nullopt;
}

std::optional<LayerNormGradsWithFp8> TeOps::layer_norm_backward_quantize(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                                                         const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                                                         const Fp8Quantizer&, bool) const {
    return std::nullopt;
}

std::optional<LayerNormGradsWithCast> TeOps::rms_norm_backward_cast(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                                                    const at::Tensor&, const at::Tensor&, at::ScalarType, bool) const {
    return std::nullopt;
}

std::optional<LayerNormGradsWithFp8> TeOps::rms_norm_backward_quantize(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                                                       const at::Tensor&, const at::Tensor&, const Fp8Quantizer&,
                                                                       bool) const {
    return std::nullopt;
}

GradWithBias TeOps::cast_dbias(const at::Tensor& dy, at::ScalarType dtype) const {
    return {dy.to(dtype), bias_grad(dy)};
}

namespace {

// dq, dk and dv [batch, seq, heads, head_dim] side by side per token: [batch · seq, 3 · heads · head_dim].
at::Tensor stacked_heads(const at::Tensor& dq, const at::Tensor& dk, const at::Tensor& dv) {
    return at::stack({dq, dk, dv}, 2).reshape({dq.size(0) * dq.size(1), 3 * dq.size(2) * dq.size(3)});
}

}  // namespace

GradWithBias TeOps::stack_heads_dbias(const at::Tensor& dq, const at::Tensor& dk, const at::Tensor& dv, at::ScalarType dtype,
                                      bool with_bias_grad) const {
    const at::Tensor dy = stacked_heads(dq, dk, dv);
    return with_bias_grad ? cast_dbias(dy, dtype) : GradWithBias{dy.to(dtype), at::Tensor()};
}

Fp8Tensor TeOps::quantize_with_handed_scale(const at::Tensor& x, const Fp8Quantizer& quantizer, const at::Tensor&,
                                            bool with_transpose) const {
    return quantize(x, quantizer, with_transpose);
}

Fp8GradWithBias TeOps::stack_heads_quantize_dbias(const at::Tensor& dq, const at::Tensor& dk, const at::Tensor& dv,
                                                  const Fp8Quantizer& quantizer, bool with_bias_grad, const at::Tensor&) const {
    const at::Tensor dy = stacked_heads(dq, dk, dv);
    if (with_bias_grad) return quantize_dbias(dy, quantizer);
    return {quantize(dy, quantizer, /*with_transpose=*/true), at::Tensor()};
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

at::Tensor TeOps::embedding_forward(const at::Tensor& table, const at::Tensor& positions, const at::Tensor& tokens) const {
    if (!positions.defined()) return at::embedding(table, tokens).reshape({-1, table.size(1)});
    const at::Tensor x = at::embedding(table, tokens).to(at::kFloat) + positions.to(at::kFloat).unsqueeze(0);
    return x.reshape({-1, table.size(1)}).to(table.scalar_type());
}

at::Tensor TeOps::embedding_backward(const at::Tensor& dy, const at::Tensor& tokens, at::Tensor& dtable,
                                     at::ScalarType positions_dtype) const {
    const std::int64_t vocab = dtable.size(0);
    const at::Tensor flat = tokens.reshape({-1});
    const at::Tensor valid = (flat >= 0).logical_and(flat < vocab);
    const at::Tensor rows = at::where(valid.unsqueeze(1), dy.to(at::kFloat), at::zeros({}, dtable.options()));
    dtable.index_add_(0, flat.clamp(0, vocab - 1), rows);
    if (positions_dtype == at::ScalarType::Undefined) return at::Tensor();
    return dy.reshape({tokens.size(0), tokens.size(1), dy.size(1)}).sum(0, /*keepdim=*/false, at::kFloat).to(positions_dtype);
}

at::Tensor TeOps::cross_entropy_with_grad(at::Tensor& logits, const at::Tensor& targets) const {
    const std::int64_t rows = logits.size(0);
    const std::int64_t vocab = logits.size(1);
    const at::Tensor flat = targets.reshape({-1});
    const at::Tensor valid = (flat >= 0).logical_and(flat < vocab);
    const at::Tensor index = flat.clamp(0, vocab - 1).unsqueeze(1);
    const at::Tensor log_probs = at::log_softmax(logits.to(at::kFloat), 1);
    const at::Tensor picked = log_probs.gather(1, index).squeeze(1);
    const at::Tensor nan = at::full({}, std::numeric_limits<float>::quiet_NaN(), picked.options());
    const at::Tensor loss = at::where(valid, -picked, nan).mean();
    at::Tensor grad = log_probs.exp();
    grad.scatter_add_(1, index, at::full({rows, 1}, -1.0f, grad.options()));
    grad.div_(static_cast<double>(rows));
    grad.masked_fill_(valid.logical_not().unsqueeze(1), std::numeric_limits<float>::quiet_NaN());
    logits.copy_(grad);
    return loss;
}

std::vector<Fp8Tensor> TeOps::adamw_step(at::TensorList params, at::TensorList grads, at::TensorList exp_avg,
                                         at::TensorList exp_avg_sq, const at::Tensor& step, at::TensorList copies,
                                         const std::vector<OptimizerFp8Cast>& fp8, const AdamWHyper& hyper) const {
    step.add_(1.0);
    const std::vector<at::Tensor> steps(params.size(), step);
    at::_fused_adamw_(params, grads, exp_avg, exp_avg_sq, /*max_exp_avg_sqs=*/{}, steps, hyper.lr, hyper.beta1, hyper.beta2,
                      hyper.weight_decay, hyper.eps, /*amsgrad=*/false, /*maximize=*/false);
    std::vector<at::Tensor> targets, sources;
    for (std::size_t i = 0; i < copies.size(); ++i) {
        if (copies[i].defined()) {
            targets.push_back(copies[i]);
            sources.push_back(params[i]);
        }
    }
    if (!targets.empty()) {
        const c10::NoGradGuard no_grad;
        at::_foreach_copy_(targets, sources);
    }
    if (fp8.empty()) return {};
    std::vector<WeightCast> casts;
    for (const OptimizerFp8Cast& c : fp8) casts.push_back({params[c.param], c.quantizer});
    const c10::NoGradGuard no_grad;
    return quantize_weights(casts);
}

}  // namespace tewb

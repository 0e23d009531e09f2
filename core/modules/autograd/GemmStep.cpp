#include "core/modules/autograd/GemmStep.h"

#include <ATen/autocast_mode.h>

#include "core/fp8/Fp8Scope.h"
#include "core/modules/ops/OpsChoice.h"
#include "core/modules/ops/ParameterCopies.h"

namespace tewb {

namespace {

std::optional<at::Tensor> optional_bias(const at::Tensor& bias) {
    return bias.defined() ? std::optional<at::Tensor>(bias) : std::nullopt;
}

// The weight's FP8 copy: the run's (ParameterCopies, all of a step's weights cast together) when a run is in
// progress, else the module's own cache, cast again when the weight or the scales change.
Fp8Tensor cached_fp8_weight(const GemmPlan& plan, const at::Tensor& weight) {
    if (ParameterCopies* copies = parameter_copies_in_force()) return copies->fp8_copy_of(weight, plan.fp8->weight, *plan.ops);
    Fp8WeightCache& cache = *plan.weight_cache;
    Fp8Context& context = *plan.fp8->weight.context;
    if (cache.tensor != weight.unsafeGetTensorImpl() || cache.version != weight._version() ||
        cache.generation != context.generation() || !cache.value.data.defined()) {
        cache.value = plan.ops->quantize(weight, plan.fp8->weight, /*with_transpose=*/true);
        cache.tensor = weight.unsafeGetTensorImpl();
        cache.version = weight._version();
        cache.generation = context.generation();
        context.note_weight_cast();
    }
    return cache.value;
}

// The two microscaling operands a GEMM takes from a quantized tensor: its rows as cast, or its transposed copy.
TeOps::MxOperand rowwise(const Fp8Tensor& t) {
    return {*t.mx, t.data, t.scale_inv, t.tensor_scale_inv, t.dtype};
}

TeOps::MxOperand columnwise(const Fp8Tensor& t) {
    return {*t.mx, t.transposed, t.transposed_scale_inv, t.transposed_tensor_scale_inv, t.dtype};
}

}  // namespace

at::ScalarType compute_dtype_for(const at::Tensor& x) {
    const c10::DeviceType device = x.device().type();
    if ((device == c10::DeviceType::CUDA || device == c10::DeviceType::CPU) && at::autocast::is_autocast_enabled(device)) {
        return at::autocast::get_autocast_dtype(device);
    }
    return x.scalar_type();
}

GemmPlan plan_gemm(const at::Tensor& x, const std::shared_ptr<Fp8Context>& context, Fp8Context::GemmSlots slots,
                   const std::shared_ptr<Fp8WeightCache>& weight_cache) {
    GemmPlan plan;
    plan.ops = &ops_in_force(x.device());
    plan.compute_dtype = compute_dtype_for(x);
    plan.weight_cache = weight_cache;
    if (const Fp8ScopeSettings* settings = Fp8Scope::active()) {
        context->prepare(settings->recipe, settings->inspect, x.device(), *plan.ops);
        Fp8Scope::enlist(context);
        plan.fp8 = GemmPlan::Fp8{{context, Fp8Pass::Forward, slots.forward + 0},
                                 {context, Fp8Pass::Forward, slots.forward + 1},
                                 {context, Fp8Pass::Backward, slots.backward + 0}};
    }
    return plan;
}

at::Tensor gemm_forward(const GemmPlan& plan, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                        SavedGemm& saved, const at::Tensor& residual, const at::Tensor& handed_scale_inv) {
    saved.has_bias = bias.defined();
    saved.weight_dtype = weight.scalar_type();
    saved.bias_dtype = bias.defined() ? bias.scalar_type() : weight.scalar_type();
    if (!plan.fp8) {
        const at::Tensor x_c = x.to(plan.compute_dtype);
        const at::Tensor w_c = parameter_copy(weight, plan.compute_dtype);
        saved.input = x_c.detach();
        saved.weight = w_c.detach();
        if (residual.defined()) return plan.ops->gemm_add(x_c, w_c, optional_bias(bias), plan.compute_dtype, residual);
        return plan.ops->gemm(x_c, w_c, optional_bias(bias), plan.compute_dtype);
    }
    const at::Tensor x_c = x.to(plan.compute_dtype);
    const Fp8Tensor xq = handed_scale_inv.defined()
                             ? plan.ops->quantize_with_handed_scale(x_c, plan.fp8->input, handed_scale_inv, /*with_transpose=*/true)
                             : plan.ops->quantize(x_c, plan.fp8->input, /*with_transpose=*/true);
    return gemm_forward_quantized(plan, xq, weight, bias, saved, residual);
}

at::Tensor gemm_forward_quantized(const GemmPlan& plan, const Fp8Tensor& xq, const at::Tensor& weight, const at::Tensor& bias,
                                  SavedGemm& saved, const at::Tensor& residual) {
    saved.has_bias = bias.defined();
    saved.weight_dtype = weight.scalar_type();
    saved.bias_dtype = bias.defined() ? bias.scalar_type() : weight.scalar_type();
    const Fp8Tensor wq = cached_fp8_weight(plan, weight);
    if (xq.mx) {  // the microscaling recipes: emulated GEMMs, the residual added after
        const at::Tensor product = plan.ops->mx_gemm(rowwise(xq), rowwise(wq), optional_bias(bias), plan.compute_dtype);
        saved.input_fp8 = xq;
        saved.input_fp8.data = at::Tensor();
        saved.weight_fp8 = wq;
        saved.weight_fp8.data = at::Tensor();
        return residual.defined() ? residual + product : product;
    }
    const at::Tensor y = residual.defined()
                             ? plan.ops->fp8_gemm_add(xq.data, xq.scale_inv, wq.data, wq.scale_inv, optional_bias(bias),
                                                      plan.compute_dtype, Accumulation::Fast, residual)
                             : plan.ops->fp8_gemm(xq.data, xq.scale_inv, wq.data, wq.scale_inv, optional_bias(bias),
                                                  plan.compute_dtype, Accumulation::Fast);
    // The backward runs after the forward's scale update: keep the scale_invs these casts used.
    saved.input_fp8 = xq.kept_past_update();
    saved.input_fp8.data = at::Tensor();
    saved.weight_fp8 = wq.kept_past_update();
    saved.weight_fp8.data = at::Tensor();  // dgrad reads the transposed copy only
    return y;
}

GeluGemmResult gemm_gelu_forward(const GemmPlan& plan, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                 SavedGemm& saved) {
    saved.has_bias = bias.defined();
    saved.weight_dtype = weight.scalar_type();
    saved.bias_dtype = bias.defined() ? bias.scalar_type() : weight.scalar_type();
    const at::Tensor x_c = x.to(plan.compute_dtype);
    const at::Tensor w_c = parameter_copy(weight, plan.compute_dtype);
    saved.input = x_c.detach();
    saved.weight = w_c.detach();
    return plan.ops->gemm_gelu(x_c, w_c, bias, plan.compute_dtype);
}

GemmGrads gemm_backward(const GemmPlan& plan, const SavedGemm& saved, const at::Tensor& dy, const at::Tensor& handed_scale_inv) {
    if (!plan.fp8) {
        const GradWithBias d = saved.has_bias ? plan.ops->cast_dbias(dy, plan.compute_dtype)
                                              : GradWithBias{dy.to(plan.compute_dtype), at::Tensor()};
        GemmGrads grads = gemm_weight_grads(plan, saved, d.grad, d.bias_grad);
        grads.dx = gemm_dgrad(plan, saved, d.grad);
        return grads;
    }
    if (saved.has_bias) {
        const Fp8GradWithBias g = plan.ops->quantize_dbias(dy, plan.fp8->grad_output);
        return gemm_backward_quantized(plan, saved, g.grad, g.bias_grad);
    }
    const Fp8Tensor gq = handed_scale_inv.defined()
                             ? plan.ops->quantize_with_handed_scale(dy, plan.fp8->grad_output, handed_scale_inv, /*with_transpose=*/true)
                             : plan.ops->quantize(dy, plan.fp8->grad_output, /*with_transpose=*/true);
    return gemm_backward_quantized(plan, saved, gq, at::Tensor());
}

GemmGrads gemm_backward_quantized(const GemmPlan& plan, const SavedGemm& saved, const Fp8Tensor& gq, const at::Tensor& bias_grad) {
    GemmGrads grads;
    if (saved.has_bias) grads.db = bias_grad.to(saved.bias_dtype);
    if (gq.mx) {
        grads.dx = plan.ops->mx_gemm(rowwise(gq), columnwise(saved.weight_fp8), std::nullopt, plan.compute_dtype);
        grads.dw = plan.ops->mx_gemm(columnwise(gq), columnwise(saved.input_fp8), std::nullopt, at::kFloat).to(saved.weight_dtype);
        plan.fp8->grad_output.context->request_backward_update();
        return grads;
    }
    grads.dx = plan.ops->fp8_gemm(gq.data, gq.scale_inv, saved.weight_fp8.transposed, saved.weight_fp8.transposed_scale(),
                                  std::nullopt, plan.compute_dtype, Accumulation::Split);
    grads.dw = plan.ops->fp8_gemm(gq.transposed, gq.transposed_scale(), saved.input_fp8.transposed, saved.input_fp8.transposed_scale(),
                                  std::nullopt, at::kFloat, Accumulation::Split)
                   .to(saved.weight_dtype);
    plan.fp8->grad_output.context->request_backward_update();
    return grads;
}

GemmGrads gemm_weight_grads(const GemmPlan& plan, const SavedGemm& saved, const at::Tensor& dy, const at::Tensor& bias_grad) {
    const bool in_epilogue = saved.has_bias && !bias_grad.defined();
    const GradWithBias w = plan.ops->wgrad_gemm(dy, saved.input, saved.weight_dtype, in_epilogue);
    GemmGrads grads;
    grads.dw = w.grad;
    if (saved.has_bias) grads.db = (in_epilogue ? w.bias_grad : bias_grad).to(saved.bias_dtype);
    return grads;
}

at::Tensor gemm_dgrad(const GemmPlan& plan, const SavedGemm& saved, const at::Tensor& dy) {
    return plan.ops->gemm(dy, saved.weight.t(), std::nullopt, plan.compute_dtype);
}

}  // namespace tewb

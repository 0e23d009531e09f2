#include "core/modules/autograd/Functions.h"

#include <array>
#include <mutex>
#include <optional>
#include <unordered_map>

#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/autograd.h>

#include "core/common/Error.h"
#include "core/ledger/Ledger.h"

namespace tewb {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The functions pick their dtypes themselves (from the plan); autocast must not re-cast inside them.
using NoAutocast = c10::impl::ExcludeDispatchKeyGuard;

// Non-tensor state a function keeps for its backward, in the context as an opaque capsule. Saved
// tensors are inputs or internal copies, never the function's outputs, so no reference cycle forms.
template <typename State>
struct Saved : torch::CustomClassHolder {
    State state;
};

template <typename State>
void keep(AutogradContext* ctx, State state) {
    auto holder = c10::make_intrusive<Saved<State>>();
    holder->state = std::move(state);
    ctx->saved_data["state"] = c10::IValue::make_capsule(std::move(holder));
}

// Hands the state to backward once; a second backward through the same graph gets a clear error.
template <typename State>
State take(AutogradContext* ctx, const char* function) {
    const auto found = ctx->saved_data.find("state");
    if (found == ctx->saved_data.end()) {
        throw std::logic_error(std::string(function) +
                               ": backward ran twice through the same graph; its saved tensors were already freed");
    }
    auto holder = c10::static_intrusive_pointer_cast<Saved<State>>(found->second.toCapsule());
    State state = std::move(holder->state);
    ctx->saved_data.erase(found);
    return state;
}

// The optional residual of a function that adds one: an autograd function's tensor inputs must be defined, so
// the residual is passed only when there is one (a trailing pack of zero or one tensors).
template <typename... Residual>
at::Tensor residual_of(const Residual&... residual) {
    static_assert(sizeof...(Residual) <= 1, "at most one residual");
    if constexpr (sizeof...(Residual) == 0) {
        return at::Tensor();
    } else {
        return (residual, ...);
    }
}

// A tensor input a module may not have (a bias, beta, a position table): LibTorch reads every tensor input's device,
// so an undefined one goes in as an empty optional and gets no gradient.
using MaybeTensor = std::optional<at::Tensor>;

MaybeTensor maybe(const at::Tensor& t) {
    return t.defined() ? MaybeTensor(t) : std::nullopt;
}

at::Tensor present(const MaybeTensor& t) {
    return t.value_or(at::Tensor());
}

struct LinearState {
    GemmPlan plan;
    SavedGemm gemm;
    at::ScalarType input_dtype = at::kFloat;
    bool has_residual = false;
    std::shared_ptr<GradientHandOver> output_grad;
};

// What a consumer takes of a ScaleHandOver, for the tensor it is about to cast with `quantizer`; undefined: nothing.
at::Tensor handed_scale_inv(const std::shared_ptr<ScaleHandOver>& hand_over, const std::vector<at::Tensor>& parts,
                            const Fp8Quantizer& quantizer) {
    return hand_over ? hand_over->take(parts, quantizer) : at::Tensor();
}

// A GEMM's backward from its output gradient already cast (and summed) by the next LayerNorm.
GemmGrads gemm_backward_handed_over(const GemmPlan& plan, const SavedGemm& saved, const GradientHandOver::Handed& d) {
    if (plan.fp8) return gemm_backward_quantized(plan, saved, d.grad_fp8, d.bias_grad);
    GemmGrads g = gemm_weight_grads(plan, saved, d.grad, d.bias_grad);
    g.dx = gemm_dgrad(plan, saved, d.grad);
    return g;
}

// The Linear's side of a GradientHandOver: asks for its output gradient's cast (an FP8 backward: with its slot).
void ask_for_output_grad(const std::shared_ptr<GradientHandOver>& output_grad, const GemmPlan& plan, bool has_bias) {
    if (!output_grad) return;
    GradientHandOver::Request request{plan.compute_dtype, std::nullopt, has_bias};
    if (plan.fp8) request.fp8 = plan.fp8->grad_output;
    output_grad->ask(request);
}

struct LinearFunction : torch::autograd::Function<LinearFunction> {
    template <typename... Residual>
    static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight, const MaybeTensor& bias_in,
                              const GemmPlan& plan, const std::shared_ptr<GradientHandOver>& output_grad,
                              const std::shared_ptr<ScaleHandOver>& input_scale, const Residual&... residual_arg) {
        NoAutocast no_autocast(c10::autocast_dispatch_keyset);
        const at::Tensor bias = present(bias_in);
        const at::Tensor residual = residual_of(residual_arg...);
        LinearState state{plan, {}, x.scalar_type(), residual.defined(), output_grad};
        ask_for_output_grad(output_grad, plan, bias.defined());
        const at::Tensor x_c = x.to(plan.compute_dtype);
        const at::Tensor handed = plan.fp8 ? handed_scale_inv(input_scale, {x_c}, plan.fp8->input) : at::Tensor();
        at::Tensor y = gemm_forward(plan, x_c, weight, bias, state.gemm, residual, handed);
        keep(ctx, std::move(state));
        return y;
    }

    // The output gradient as it comes (float32 from a float32 residual stream): an FP8 backward casts it itself,
    // a high-precision one in gemm_backward; the residual's gradient is the same tensor.
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        NoAutocast no_autocast(c10::autocast_dispatch_keyset);
        const LinearState state = take<LinearState>(ctx, "Linear");
        const std::optional<GradientHandOver::Handed> handed =
            state.output_grad ? state.output_grad->take(grads[0]) : std::nullopt;
        const GemmGrads g = handed ? gemm_backward_handed_over(state.plan, state.gemm, *handed)
                                   : gemm_backward(state.plan, state.gemm, grads[0]);
        variable_list out{g.dx.to(state.input_dtype), g.dw, g.db, at::Tensor(), at::Tensor(), at::Tensor()};
        if (state.has_residual) out.push_back(grads[0]);
        return out;
    }
};

struct NormState {
    LayerNormPlan plan;
    at::Tensor x, gamma, mean, rstd;
};

NormState norm_state(const LayerNormPlan& plan, const at::Tensor& x, const at::Tensor& gamma, const LayerNormResult& ln) {
    return {plan, x.detach(), gamma.detach(), ln.mean, ln.rstd};
}

// The plan's normalization: LayerNorm (mean and rstd kept), or RMSNorm (rstd only, no beta).
LayerNormResult normalize(const LayerNormPlan& plan, const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta,
                          at::ScalarType out_dtype) {
    if (plan.normalization == Normalization::LayerNorm) return plan.ops->layer_norm_forward(x, gamma, beta, plan.eps, out_dtype);
    RmsNormResult r = plan.ops->rms_norm_forward(x, gamma, plan.eps, out_dtype);
    return {std::move(r.out), at::Tensor(), std::move(r.rstd)};
}

// The normalization writing the next GEMM's FP8 input (layer_norm_quantize, rms_norm_quantize).
Fp8Tensor normalize_quantized(const LayerNormPlan& plan, const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta,
                              at::ScalarType out_dtype, const Fp8Quantizer& quantizer, bool keep_output, LayerNormResult& ln) {
    if (plan.normalization == Normalization::LayerNorm) {
        return plan.ops->layer_norm_quantize(x, gamma, beta, plan.eps, out_dtype, quantizer, keep_output, ln);
    }
    RmsNormResult r;
    Fp8Tensor q = plan.ops->rms_norm_quantize(x, gamma, plan.eps, out_dtype, quantizer, keep_output, r);
    ln = {std::move(r.out), at::Tensor(), std::move(r.rstd)};
    return q;
}

// With a defined `dresidual` (the gradient x also gets through a skip connection), dx includes it, summed in the
// normalization's pass (TeOps::layer_norm_backward_add, rms_norm_backward_add) rather than by the autograd engine.
// A LayerNorm's backward that delivers its dx to the Linear that made x (GradientHandOver), where that Linear asked
// and the ops have a pass that casts it (TeOps::layer_norm_backward_cast, layer_norm_backward_quantize; RMSNorm's:
// rms_norm_backward_cast, rms_norm_backward_quantize); nothing otherwise.
std::optional<LayerNormGrads> delivering_norm_backward(const NormState& s, const at::Tensor& dy, const at::Tensor& dresidual,
                                                       GradientHandOver* input_grad) {
    if (input_grad == nullptr || !input_grad->request()) return std::nullopt;
    const GradientHandOver::Request& request = *input_grad->request();
    const TeOps& ops = *s.plan.ops;
    if (s.plan.normalization == Normalization::RmsNorm) {
        if (!request.fp8) {
            std::optional<LayerNormGradsWithCast> r =
                ops.rms_norm_backward_cast(dy, s.x, s.rstd, s.gamma, dresidual, request.dtype, request.bias_grad);
            if (!r) return std::nullopt;
            input_grad->deliver(r->norm.dx, {std::move(r->cast.grad), Fp8Tensor(), std::move(r->cast.bias_grad)});
            return std::move(r->norm);
        }
        std::optional<LayerNormGradsWithFp8> r =
            ops.rms_norm_backward_quantize(dy, s.x, s.rstd, s.gamma, dresidual, *request.fp8, request.bias_grad);
        if (!r) return std::nullopt;
        input_grad->deliver(r->norm.dx, {at::Tensor(), std::move(r->fp8.grad), std::move(r->fp8.bias_grad)});
        return std::move(r->norm);
    }
    if (request.fp8) {
        std::optional<LayerNormGradsWithFp8> r =
            ops.layer_norm_backward_quantize(dy, s.x, s.mean, s.rstd, s.gamma, dresidual, *request.fp8, request.bias_grad);
        if (!r) return std::nullopt;
        input_grad->deliver(r->norm.dx, {at::Tensor(), std::move(r->fp8.grad), std::move(r->fp8.bias_grad)});
        return std::move(r->norm);
    }
    std::optional<LayerNormGradsWithCast> r =
        ops.layer_norm_backward_cast(dy, s.x, s.mean, s.rstd, s.gamma, dresidual, request.dtype, request.bias_grad);
    if (!r) return std::nullopt;
    input_grad->deliver(r->norm.dx, {std::move(r->cast.grad), Fp8Tensor(), std::move(r->cast.bias_grad)});
    return std::move(r->norm);
}

LayerNormGrads norm_backward(const NormState& s, const at::Tensor& dy, const at::Tensor& dresidual = {},
                             GradientHandOver* input_grad = nullptr) {
    if (std::optional<LayerNormGrads> delivered = delivering_norm_backward(s, dy, dresidual, input_grad)) return std::move(*delivered);
    if (s.plan.normalization == Normalization::RmsNorm) {
        RmsNormGrads g = dresidual.defined() ? s.plan.ops->rms_norm_backward_add(dy, s.x, s.rstd, s.gamma, dresidual)
                                             : s.plan.ops->rms_norm_backward(dy, s.x, s.rstd, s.gamma);
        return {std::move(g.dx), std::move(g.dgamma), at::Tensor()};
    }
    if (dresidual.defined()) return s.plan.ops->layer_norm_backward_add(dy, s.x, s.mean, s.rstd, s.gamma, dresidual);
    return s.plan.ops->layer_norm_backward(dy, s.x, s.mean, s.rstd, s.gamma);
}

struct LayerNormState {
    NormState norm;
    std::shared_ptr<GradientHandOver> input_grad;
};

struct LayerNormFunction : torch::autograd::Function<LayerNormFunction> {
    static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& gamma, const MaybeTensor& beta,
                              const LayerNormPlan& plan, const std::shared_ptr<GradientHandOver>& input_grad) {
        NoAutocast no_autocast(c10::autocast_dispatch_keyset);
        const LayerNormResult ln = normalize(plan, x, gamma, present(beta), plan.compute_dtype);
        keep(ctx, LayerNormState{norm_state(plan, x, gamma, ln), input_grad});
        return ln.out;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        NoAutocast no_autocast(c10::autocast_dispatch_keyset);
        const LayerNormState state = take<LayerNormState>(ctx, "LayerNorm");
        const LayerNormGrads g = norm_backward(state.norm, grads[0], at::Tensor(), state.input_grad.get());
        return {g.dx, g.dgamma, g.dbeta, at::Tensor(), at::Tensor()};
    }
};

struct LayerNormLinearState {
    NormState norm;
    GemmPlan plan;
    SavedGemm gemm;
    bool layernorm_output = false;
    bool input_output = false;
    HeadSplit split;
    std::shared_ptr<GradientHandOver> input_grad;
    std::shared_ptr<ScaleHandOver> output_grad_scale;
};

// The projection's backward from the attention's dq, dk and dv (HeadSplit): one pass stacks and casts them (FP8: the
// grad-output slot's cast with its transposed copy; else the GEMMs' dtype) and sums the bias gradient, then the GEMMs.
GemmGrads split_heads_backward(const LayerNormLinearState& s, const at::Tensor& dq, const at::Tensor& dk, const at::Tensor& dv) {
    const GemmPlan& plan = s.plan;
    if (plan.fp8) {
        const at::Tensor handed = handed_scale_inv(s.output_grad_scale, {dq, dk, dv}, plan.fp8->grad_output);
        const Fp8GradWithBias d = plan.ops->stack_heads_quantize_dbias(dq, dk, dv, plan.fp8->grad_output, s.gemm.has_bias, handed);
        return gemm_backward_quantized(plan, s.gemm, d.grad, d.bias_grad);
    }
    const GradWithBias d = plan.ops->stack_heads_dbias(dq, dk, dv, plan.compute_dtype, s.gemm.has_bias);
    GemmGrads g = gemm_weight_grads(plan, s.gemm, d.grad, d.bias_grad);
    g.dx = gemm_dgrad(plan, s.gemm, d.grad);
    return g;
}

// Returns {y}, then LayerNorm's output with `layernorm_output`, then x itself with `input_output` (for a skip
// connection: the gradient it gets comes back to this function, which adds it in the LayerNorm backward). In
// FP8 the LayerNorm writes the GEMM's FP8 input (and its transposed copy) itself, and its high-precision output
// only when it is returned.
struct LayerNormLinearFunction : torch::autograd::Function<LayerNormLinearFunction> {
    static variable_list forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& gamma, const MaybeTensor& beta_in,
                                 const at::Tensor& weight, const MaybeTensor& bias_in, const LayerNormPlan& norm,
                                 const GemmPlan& plan, bool layernorm_output, bool input_output, const HeadSplit& split,
                                 const std::shared_ptr<GradientHandOver>& input_grad,
                                 const std::shared_ptr<ScaleHandOver>& output_grad_scale) {
        NoAutocast no_autocast(c10::autocast_dispatch_keyset);
        const at::Tensor beta = present(beta_in);
        const at::Tensor bias = present(bias_in);
        LayerNormResult ln;
        at::Tensor y;
        LayerNormLinearState state{{}, plan, {}, layernorm_output, input_output, split, input_grad, nullptr};
        // Asked where the backward's cast can take it: the split's stacked cast (with or without the bias gradient), a
        // single output's cast without one (gemm_backward casts and sums a biased gradient in one pass that takes its own
        // amax).
        if (plan.fp8 && output_grad_scale && (split.active() || !bias.defined())) {
            output_grad_scale->ask(plan.fp8->grad_output);
            state.output_grad_scale = output_grad_scale;
        }
        if (plan.fp8) {
            const Fp8Tensor xq = normalize_quantized(norm, x, gamma, beta, plan.compute_dtype, plan.fp8->input, layernorm_output, ln);
            y = gemm_forward_quantized(plan, xq, weight, bias, state.gemm);
        } else {
            ln = normalize(norm, x, gamma, beta, plan.compute_dtype);
            y = gemm_forward(plan, ln.out, weight, bias, state.gemm);
        }
        state.norm = norm_state(norm, x, gamma, ln);
        keep(ctx, std::move(state));
        variable_list out;
        if (split.active()) {
            out = y.view({split.batch, split.seq, 3, split.heads, split.head_dim}).unbind(2);
        } else {
            out.push_back(y);
        }
        if (layernorm_output) out.push_back(ln.out);
        if (input_output) out.push_back(x);  // returned as it is: autograd makes it a view whose gradient comes here
        return out;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        NoAutocast no_autocast(c10::autocast_dispatch_keyset);
        const LayerNormLinearState state = take<LayerNormLinearState>(ctx, "LayerNormLinear");
        const std::size_t outputs = state.split.active() ? 3 : 1;
        // A single output's FP8 gradient may come cast by the op it fed (the rotary's inverse under delayed scaling), or
        // its scale (the amax hand-off).
        const bool single_fp8 = !state.split.active() && state.plan.fp8 && state.output_grad_scale;
        const std::optional<Fp8Tensor> handed_cast =
            single_fp8 ? state.output_grad_scale->take_cast({grads[0]}, state.plan.fp8->grad_output) : std::nullopt;
        const at::Tensor handed = single_fp8 && !handed_cast
                                      ? handed_scale_inv(state.output_grad_scale, {grads[0]}, state.plan.fp8->grad_output)
                                      : at::Tensor();
        const GemmGrads g = state.split.active() ? split_heads_backward(state, grads[0], grads[1], grads[2])
                            : handed_cast        ? gemm_backward_quantized(state.plan, state.gemm, *handed_cast, at::Tensor())
                                                 : gemm_backward(state.plan, state.gemm, grads[0], handed);
        at::Tensor d_ln = g.dx;
        if (state.layernorm_output && grads[outputs].defined()) {
            d_ln = d_ln + grads[outputs].to(d_ln.scalar_type());
        }
        const std::size_t skip = outputs + (state.layernorm_output ? 1 : 0);
        const at::Tensor dresidual = state.input_output && grads.size() > skip ? grads[skip] : at::Tensor();
        const LayerNormGrads n = norm_backward(state.norm, d_ln, dresidual, state.input_grad.get());
        return {n.dx,         n.dgamma,     n.dbeta,      g.dw,         g.db,         at::Tensor(),
                at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    }
};

struct LayerNormMlpState {
    NormState norm;
    GemmPlan fc1_plan, fc2_plan;
    SavedGemm fc1, fc2;
    at::Tensor fc1_out;  // the activation's input, kept in high precision for its backward
    bool has_residual = false;
    bool input_is_residual = false;
    Activation activation = Activation::Gelu;
    std::shared_ptr<GradientHandOver> input_grad, output_grad;
};

// The MLP's GEMMs and activation after its normalization, FP8: fc1 reads the normalization's FP8 output; one
// activation pass writes fc2's FP8 input (gelu_quantize, swiglu_quantize).
at::Tensor mlp_forward_fp8(LayerNormMlpState& state, const Fp8Tensor& xq, const at::Tensor& fc1_weight, const at::Tensor& fc1_bias,
                           const at::Tensor& fc2_weight, const at::Tensor& fc2_bias, const at::Tensor& residual) {
    const GemmPlan& fc1 = state.fc1_plan;
    const GemmPlan& fc2 = state.fc2_plan;
    state.fc1_out = gemm_forward_quantized(fc1, xq, fc1_weight, fc1_bias, state.fc1);
    const Fp8Tensor aq = state.activation == Activation::Swiglu ? fc2.ops->swiglu_quantize(state.fc1_out, fc2.fp8->input)
                                                                : fc2.ops->gelu_quantize(state.fc1_out, fc2.fp8->input);
    return gemm_forward_quantized(fc2, aq, fc2_weight, fc2_bias, state.fc2, residual);
}

// High precision: GELU in fc1's epilogue; SwiGLU as its own pass between the GEMMs.
at::Tensor mlp_forward_hp(LayerNormMlpState& state, const at::Tensor& ln_out, const at::Tensor& fc1_weight, const at::Tensor& fc1_bias,
                          const at::Tensor& fc2_weight, const at::Tensor& fc2_bias, const at::Tensor& residual) {
    const GemmPlan& fc1 = state.fc1_plan;
    const GemmPlan& fc2 = state.fc2_plan;
    if (state.activation == Activation::Swiglu) {
        state.fc1_out = gemm_forward(fc1, ln_out, fc1_weight, fc1_bias, state.fc1);
        return gemm_forward(fc2, fc2.ops->swiglu_forward(state.fc1_out), fc2_weight, fc2_bias, state.fc2, residual);
    }
    const GeluGemmResult h = gemm_gelu_forward(fc1, ln_out, fc1_weight, fc1_bias, state.fc1);
    state.fc1_out = h.pre;
    return gemm_forward(fc2, h.activation, fc2_weight, fc2_bias, state.fc2, residual);
}

// The backward of the GEMMs and activation, FP8: fc2's backward casts dy; one activation-backward pass writes fc1's FP8
// gradient with its transposed copy (and GELU's fc1 bias gradient). SwiGLU with a bias on fc1 casts the gradient with
// its column sums instead (quantize_dbias).
std::pair<GemmGrads, GemmGrads> mlp_backward_fp8(const LayerNormMlpState& s, const at::Tensor& dy) {
    const GemmPlan& fc1 = s.fc1_plan;
    // fc2's FP8 output gradient as the next LayerNorm handed it over, else cast here.
    const std::optional<GradientHandOver::Handed> handed = s.output_grad ? s.output_grad->take(dy) : std::nullopt;
    GemmGrads g2 = handed ? gemm_backward_handed_over(s.fc2_plan, s.fc2, *handed) : gemm_backward(s.fc2_plan, s.fc2, dy);
    if (s.activation == Activation::Gelu) {
        const Fp8GradWithBias d = fc1.ops->gelu_backward_quantize(g2.dx, s.fc1_out, fc1.fp8->grad_output);
        return {gemm_backward_quantized(fc1, s.fc1, d.grad, d.bias_grad), std::move(g2)};
    }
    if (s.fc1.has_bias) return {gemm_backward(fc1, s.fc1, fc1.ops->swiglu_backward(g2.dx, s.fc1_out)), std::move(g2)};
    const Fp8Tensor d = fc1.ops->swiglu_backward_quantize(g2.dx, s.fc1_out, fc1.fp8->grad_output);
    return {gemm_backward_quantized(fc1, s.fc1, d, at::Tensor()), std::move(g2)};
}

// High precision, from the output gradient as it comes (float32 from a float32 residual stream): one pass casts it to
// the GEMMs' dtype and sums fc2's bias gradient (cast_dbias); GELU's derivative and fc1's bias gradient come from one
// pass after fc2's dgrad (gemm_dgelu); SwiGLU's backward is its own pass between the GEMMs.
std::pair<GemmGrads, GemmGrads> mlp_backward_hp(const LayerNormMlpState& s, const at::Tensor& dy) {
    const GemmPlan& fc1 = s.fc1_plan;
    // fc2's output gradient as the next LayerNorm handed it over (cast and summed), else cast here.
    const std::optional<GradientHandOver::Handed> handed = s.output_grad ? s.output_grad->take(dy) : std::nullopt;
    if (s.activation == Activation::Swiglu) {
        GemmGrads g2 = handed ? gemm_backward_handed_over(s.fc2_plan, s.fc2, *handed) : gemm_backward(s.fc2_plan, s.fc2, dy);
        return {gemm_backward(fc1, s.fc1, fc1.ops->swiglu_backward(g2.dx, s.fc1_out)), std::move(g2)};
    }
    const GradWithBias d2 = handed           ? GradWithBias{handed->grad, handed->bias_grad}
                            : s.fc2.has_bias ? s.fc2_plan.ops->cast_dbias(dy, s.fc2_plan.compute_dtype)
                                             : GradWithBias{dy.to(s.fc2_plan.compute_dtype), at::Tensor()};
    GemmGrads g2 = gemm_weight_grads(s.fc2_plan, s.fc2, d2.grad, d2.bias_grad);
    const GradWithBias d = fc1.ops->gemm_dgelu(d2.grad, s.fc2.weight, s.fc1_out, fc1.compute_dtype);
    GemmGrads g1 = gemm_weight_grads(fc1, s.fc1, d.grad, s.fc1.has_bias ? d.bias_grad : at::Tensor());
    g1.dx = gemm_dgrad(fc1, s.fc1, d.grad);
    return {std::move(g1), std::move(g2)};
}

// Fused as Transformer Engine fuses it. FP8: the normalization writes fc1's FP8 input (and its transposed
// copy); fc1 adds its bias in the epilogue; one activation pass writes fc2's FP8 input; in the backward one
// activation-backward pass writes fc1's FP8 gradient, its transposed copy and (GELU) fc1's bias gradient. High
// precision, GELU: fc1 applies GELU in its epilogue (GELU_AUX_BIAS); in the backward one pass casts the output
// gradient and sums fc2's bias gradient (cast_dbias), and one pass after fc2's plain dgrad applies GELU's derivative
// and sums fc1's bias gradient (the GELU backward kernel): no cuBLASLt bias-gradient epilogue, whose helper kernels
// and memsets cost more launches (docs/kernels.md).
struct LayerNormMlpFunction : torch::autograd::Function<LayerNormMlpFunction> {
    template <typename... Residual>
    static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& gamma, const MaybeTensor& beta_in,
                              const at::Tensor& fc1_weight, const MaybeTensor& fc1_bias_in, const at::Tensor& fc2_weight,
                              const MaybeTensor& fc2_bias_in, const LayerNormPlan& norm, const GemmPlan& fc1,
                              const GemmPlan& fc2, Activation activation, bool input_is_residual,
                              const std::shared_ptr<GradientHandOver>& input_grad, const std::shared_ptr<GradientHandOver>& output_grad,
                              const Residual&... residual_arg) {
        NoAutocast no_autocast(c10::autocast_dispatch_keyset);
        const at::Tensor beta = present(beta_in);
        const at::Tensor fc1_bias = present(fc1_bias_in);
        const at::Tensor fc2_bias = present(fc2_bias_in);
        const at::Tensor residual = input_is_residual ? x : residual_of(residual_arg...);
        LayerNormMlpState state{{}, fc1, fc2, {}, {}, {}, sizeof...(Residual) > 0, input_is_residual, activation, input_grad, output_grad};
        ask_for_output_grad(output_grad, fc2, fc2_bias.defined());
        LayerNormResult ln;
        at::Tensor y;
        if (fc1.fp8 && fc2.fp8) {
            const Fp8Tensor xq = normalize_quantized(norm, x, gamma, beta, fc1.compute_dtype, fc1.fp8->input, false, ln);
            y = mlp_forward_fp8(state, xq, fc1_weight, fc1_bias, fc2_weight, fc2_bias, residual);
        } else {
            ln = normalize(norm, x, gamma, beta, fc1.compute_dtype);
            y = mlp_forward_hp(state, ln.out, fc1_weight, fc1_bias, fc2_weight, fc2_bias, residual);
        }
        state.norm = norm_state(norm, x, gamma, ln);
        keep(ctx, std::move(state));
        return y;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        NoAutocast no_autocast(c10::autocast_dispatch_keyset);
        const LayerNormMlpState s = take<LayerNormMlpState>(ctx, "LayerNormMLP");
        const bool fp8 = s.fc1_plan.fp8 && s.fc2_plan.fp8;
        // Both take the output gradient as it comes and cast it in a pass that also does other work.
        const auto [g1, g2] = fp8 ? mlp_backward_fp8(s, grads[0]) : mlp_backward_hp(s, grads[0]);
        // The input as the residual: the output gradient reaches x through the skip too, added in the normalization's pass.
        const LayerNormGrads n =
            norm_backward(s.norm, g1.dx, s.input_is_residual ? grads[0] : at::Tensor(), s.input_grad.get());
        variable_list out{n.dx,         n.dgamma,     n.dbeta,      g1.dw,        g1.db,        g2.dw,       g2.db,
                          at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
        if (s.has_residual) out.push_back(grads[0]);
        return out;
    }
};

struct RotaryState {
    const TeOps* ops = nullptr;
    at::Tensor cos, sin;
    std::int64_t rotated_heads = 0;
    std::shared_ptr<ScaleHandOver> grad_scale;
};

// The rotation is orthogonal: its backward is the inverse rotation of the output gradient, one call of the same op.
struct RotaryFunction : torch::autograd::Function<RotaryFunction> {
    static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                              std::int64_t rotated_heads, const TeOps* ops, const std::shared_ptr<ScaleHandOver>& grad_scale) {
        NoAutocast no_autocast(c10::autocast_dispatch_keyset);
        keep(ctx, RotaryState{ops, cos, sin, rotated_heads, grad_scale});
        return ops->rotary(x, cos, sin, rotated_heads, /*inverse=*/false);
    }

    // Where the projection that made x asked for its output gradient's scale, the inverse rotation writes it (the amax
    // hand-off) or, under delayed scaling, the gradient's FP8 cast itself, and delivers it with dx.
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        NoAutocast no_autocast(c10::autocast_dispatch_keyset);
        const RotaryState s = take<RotaryState>(ctx, "Rotary");
        const at::Tensor dy = grads[0].contiguous();
        at::Tensor dx;
        if (const Fp8Quantizer* request = s.grad_scale ? s.grad_scale->request() : nullptr) {
            TeOps::RotaryHandOver r = s.ops->rotary_handing_over(dy, s.cos, s.sin, s.rotated_heads, /*inverse=*/true, *request);
            dx = std::move(r.y);
            if (r.cast) {
                s.grad_scale->deliver_cast({dx}, std::move(*r.cast));
            } else if (r.scale_inv.defined()) {
                s.grad_scale->deliver({dx}, r.scale_inv);
            }
        } else {
            dx = s.ops->rotary(dy, s.cos, s.sin, s.rotated_heads, /*inverse=*/true);
        }
        return {dx, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    }
};

// The attention functions' backward is one call of the ops, not differentiable itself.
void refuse_graph_building_backward() {
    if (at::GradMode::is_enabled()) {
        throw std::logic_error("Attention: a backward that builds a graph (create_graph) is not supported: its "
                               "gradients would be constants to a second backward");
    }
}

struct AttentionState {
    const TeOps* ops = nullptr;
    at::Tensor lse;
    double scale = 1.0;
    std::shared_ptr<ScaleHandOver> grad_scale;
};

// q, k, v and the output go through save_for_backward (unlike the other functions' capsules): the backward reads all
// four again, so an in-place change of any of them after the forward is the engine's error, not a wrong gradient (the
// engine keeps the saved output without its node, so no cycle forms).
struct AttentionFunction : torch::autograd::Function<AttentionFunction> {
    static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale,
                              const TeOps* ops, const std::shared_ptr<ScaleHandOver>& out_scale,
                              const std::shared_ptr<ScaleHandOver>& grad_scale) {
        NoAutocast no_autocast(c10::autocast_dispatch_keyset);
        AttentionResult r = ops->attention_forward(q, k, v, scale, out_scale ? out_scale->request() : nullptr);
        if (r.out_scale_inv.defined()) out_scale->deliver({r.out}, r.out_scale_inv);
        keep(ctx, AttentionState{ops, r.lse, scale, grad_scale});
        ctx->save_for_backward({q, k, v, r.out});
        return r.out;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        refuse_graph_building_backward();
        NoAutocast no_autocast(c10::autocast_dispatch_keyset);
        const AttentionState s = take<AttentionState>(ctx, "Attention");
        const variable_list saved = ctx->get_saved_variables();
        const AttentionGrads g = s.ops->attention_backward(saved[0], saved[1], saved[2], {saved[3], s.lse, at::Tensor()}, grads[0],
                                                           s.scale, s.grad_scale ? s.grad_scale->request() : nullptr);
        if (g.scale_inv.defined()) s.grad_scale->deliver({g.dq, g.dk, g.dv}, g.scale_inv);
        return {g.dq, g.dk, g.dv, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    }
};

// The whole gradient of a packed [batch, seq, heads + 2 · kv_heads, d] q/k/v tensor from the three gradients: the
// tensor they are views of where they lie side by side as the ops write them (TeOps::attention_backward: no copy),
// else their concatenation.
at::Tensor packed_gradient(const AttentionGrads& g) {
    const std::int64_t heads = g.dq.size(2), kv_heads = g.dk.size(2), d = g.dq.size(3);
    const bool side_by_side = g.dk.sizes() == g.dv.sizes() && g.dk.size(0) == g.dq.size(0) && g.dk.size(1) == g.dq.size(1) &&
                              g.dk.size(3) == d && g.dk.scalar_type() == g.dq.scalar_type() &&
                              g.dv.scalar_type() == g.dq.scalar_type() && g.dk.strides() == g.dq.strides() &&
                              g.dv.strides() == g.dq.strides() && g.dq.stride(3) == 1 &&
                              g.dq.stride(2) == d && g.dq.stride(1) == (heads + 2 * kv_heads) * d &&
                              g.dq.stride(0) == g.dq.size(1) * g.dq.stride(1) && g.dk.is_alias_of(g.dq) && g.dv.is_alias_of(g.dq) &&
                              g.dk.storage_offset() == g.dq.storage_offset() + heads * d &&
                              g.dv.storage_offset() == g.dk.storage_offset() + kv_heads * d;
    if (!side_by_side) return at::cat({g.dq, g.dk, g.dv}, 2);
    return g.dq.as_strided({g.dq.size(0), g.dq.size(1), heads + 2 * kv_heads, d}, g.dq.strides(), g.dq.storage_offset());
}

struct PackedAttentionState {
    const TeOps* ops = nullptr;
    at::Tensor lse;
    double scale = 1.0;
    std::int64_t heads = 0, kv_heads = 0;
};

// q, k and v as views of the packed heads [batch, seq, heads + 2 · kv_heads, d].
std::array<at::Tensor, 3> unpacked(const at::Tensor& qkv, std::int64_t heads, std::int64_t kv_heads) {
    return {qkv.narrow(2, 0, heads), qkv.narrow(2, heads, kv_heads), qkv.narrow(2, heads + kv_heads, kv_heads)};
}

// As AttentionFunction over q, k and v packed in one tensor (a projection's heads, rotated or not): its gradient is the
// one tensor the ops' backward writes the three into, where split's backward would concatenate three (a copy a layer).
struct PackedAttentionFunction : torch::autograd::Function<PackedAttentionFunction> {
    static at::Tensor forward(AutogradContext* ctx, const at::Tensor& qkv, std::int64_t heads, std::int64_t kv_heads, double scale,
                              const TeOps* ops, const std::shared_ptr<ScaleHandOver>& out_scale) {
        NoAutocast no_autocast(c10::autocast_dispatch_keyset);
        const std::array<at::Tensor, 3> in = unpacked(qkv, heads, kv_heads);
        AttentionResult r = ops->attention_forward(in[0], in[1], in[2], scale, out_scale ? out_scale->request() : nullptr);
        if (r.out_scale_inv.defined()) out_scale->deliver({r.out}, r.out_scale_inv);
        keep(ctx, PackedAttentionState{ops, r.lse, scale, heads, kv_heads});
        ctx->save_for_backward({qkv, r.out});
        return r.out;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        refuse_graph_building_backward();
        NoAutocast no_autocast(c10::autocast_dispatch_keyset);
        const PackedAttentionState s = take<PackedAttentionState>(ctx, "Attention");
        const variable_list saved = ctx->get_saved_variables();
        const std::array<at::Tensor, 3> in = unpacked(saved[0], s.heads, s.kv_heads);
        const AttentionGrads g = s.ops->attention_backward(in[0], in[1], in[2], {saved[1], s.lse, at::Tensor()}, grads[0], s.scale, nullptr);
        return {packed_gradient(g), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    }
};

struct EmbeddingState {
    const TeOps* ops = nullptr;
    at::Tensor tokens;
    std::shared_ptr<TiedTableGradient> tied;
    std::vector<std::int64_t> table_shape;
    at::ScalarType positions_dtype = at::kFloat;
    c10::TensorOptions grad_options;
};

struct EmbeddingFunction : torch::autograd::Function<EmbeddingFunction> {
    static at::Tensor forward(AutogradContext* ctx, const at::Tensor& table, const MaybeTensor& positions_in, const at::Tensor& tokens,
                              const TeOps* ops, const std::shared_ptr<TiedTableGradient>& tied) {
        NoAutocast no_autocast(c10::autocast_dispatch_keyset);
        const at::Tensor positions = present(positions_in);
        const at::ScalarType positions_dtype = positions.defined() ? positions.scalar_type() : at::ScalarType::Undefined;
        keep(ctx, EmbeddingState{ops, tokens, tied, table.sizes().vec(), positions_dtype, table.options().dtype(at::kFloat)});
        return ops->embedding_forward(table, positions, tokens);
    }

    // The table's whole gradient from this pair: the head's handed over (then added to in place), else zeros.
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        NoAutocast no_autocast(c10::autocast_dispatch_keyset);
        EmbeddingState s = take<EmbeddingState>(ctx, "Embedding");
        at::Tensor dtable;
        if (s.tied) dtable = std::move(s.tied->dtable);
        if (!dtable.defined() || dtable.scalar_type() != at::kFloat) {
            at::Tensor zeros = at::zeros(s.table_shape, s.grad_options);
            if (dtable.defined()) zeros.add_(dtable);
            dtable = std::move(zeros);
        }
        const at::Tensor dpositions = s.ops->embedding_backward(grads[0], s.tokens, dtable, s.positions_dtype);
        return {dtable, dpositions, at::Tensor(), at::Tensor(), at::Tensor()};
    }
};

struct HeadLossState {
    GemmPlan plan;
    SavedGemm gemm;
    at::Tensor dlogits;  // for a loss gradient of 1
    at::ScalarType input_dtype = at::kFloat;
    std::shared_ptr<TiedTableGradient> tied;
};

struct TiedHeadLossFunction : torch::autograd::Function<TiedHeadLossFunction> {
    static at::Tensor forward(AutogradContext* ctx, const at::Tensor& h, const at::Tensor& table, const at::Tensor& targets,
                              const GemmPlan& plan, const std::shared_ptr<TiedTableGradient>& tied) {
        NoAutocast no_autocast(c10::autocast_dispatch_keyset);
        HeadLossState state{plan, {}, {}, h.scalar_type(), tied};
        at::Tensor logits = gemm_forward(plan, h.to(plan.compute_dtype), table, at::Tensor(), state.gemm);
        at::Tensor loss;
        {
            const LedgerScope scope(LedgerScope::Outside{}, "loss");  // its own place, not inside the head
            loss = plan.ops->cross_entropy_with_grad(logits, targets);
        }
        state.dlogits = logits;
        keep(ctx, std::move(state));
        return loss;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        NoAutocast no_autocast(c10::autocast_dispatch_keyset);
        const HeadLossState s = take<HeadLossState>(ctx, "TiedHeadLoss");
        const at::Tensor& g = grads[0];
        const bool unit = g.unsafeGetTensorImpl() == unit_loss_gradient(g.device()).unsafeGetTensorImpl();
        const at::Tensor dlogits = unit ? s.dlogits : (s.dlogits * g).to(s.dlogits.scalar_type());
        GemmGrads w = gemm_weight_grads(s.plan, s.gemm, dlogits);
        const at::Tensor dh = gemm_dgrad(s.plan, s.gemm, dlogits).to(s.input_dtype);
        // Handed to the embedding's backward, which adds its rows and returns the sum: the engine gets one gradient
        // for the table from the pair and sums nothing, whatever else reads the table.
        if (s.tied && s.tied->embedding_takes_it) {
            s.tied->dtable = std::move(w.dw);
            return {dh, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
        }
        return {dh, w.dw, at::Tensor(), at::Tensor(), at::Tensor()};
    }
};

}  // namespace

at::Tensor apply_embedding(const at::Tensor& table, const at::Tensor& positions, const at::Tensor& tokens, const TeOps& ops,
                           const std::shared_ptr<TiedTableGradient>& tied) {
    // Only a recorded embedding backward can take the head's gradient (not under no-grad, not a frozen table).
    if (tied) tied->embedding_takes_it = c10::GradMode::is_enabled() && table.requires_grad();
    return EmbeddingFunction::apply(table, maybe(positions), tokens, &ops, tied);
}

at::Tensor apply_tied_head_loss(const at::Tensor& h, const at::Tensor& table, const at::Tensor& targets, const GemmPlan& plan,
                                const std::shared_ptr<TiedTableGradient>& tied) {
    return TiedHeadLossFunction::apply(h, table, targets, plan, tied);
}

const at::Tensor& unit_loss_gradient(const c10::Device& device) {
    static std::mutex mutex;
    // Kept for the process and never destroyed: a CUDA tensor must not outlive the CUDA context at exit.
    static auto* units = new std::unordered_map<c10::Device, at::Tensor>();
    const std::lock_guard<std::mutex> lock(mutex);
    at::Tensor& unit = (*units)[device];
    if (!unit.defined()) unit = at::ones({}, at::TensorOptions().device(device).dtype(at::kFloat));
    return unit;
}

at::Tensor apply_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, const GemmPlan& plan,
                        const at::Tensor& residual, const std::shared_ptr<GradientHandOver>& output_grad,
                        const std::shared_ptr<ScaleHandOver>& input_scale) {
    if (residual.defined()) return LinearFunction::apply(x, weight, maybe(bias), plan, output_grad, input_scale, residual);
    return LinearFunction::apply(x, weight, maybe(bias), plan, output_grad, input_scale);
}

void ask_input_scale_of(const GemmPlan& plan, ScaleHandOver& hand_over) {
    if (plan.fp8) hand_over.ask(plan.fp8->input);
}

at::Tensor apply_layer_norm(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, const LayerNormPlan& plan,
                            const std::shared_ptr<GradientHandOver>& input_grad) {
    return LayerNormFunction::apply(x, gamma, maybe(beta), plan, input_grad);
}

void GradientHandOver::deliver(const at::Tensor& dx, Handed handed) {
    delivered_ = std::move(handed);
    dx_ = dx;
    version_ = dx._version();
    if (request_ && request_->fp8) scale_changes_ = request_->fp8->context->scale_changes();
}

void ScaleHandOver::remember(std::vector<at::Tensor> parts) {
    parts_ = std::move(parts);
    versions_.clear();
    for (const at::Tensor& part : parts_) versions_.push_back(part._version());
    if (request_) scale_changes_ = request_->context->scale_changes();
}

void ScaleHandOver::deliver(std::vector<at::Tensor> parts, const at::Tensor& scale_inv) {
    remember(std::move(parts));
    scale_inv_ = scale_inv;
    cast_.reset();
}

void ScaleHandOver::deliver_cast(std::vector<at::Tensor> parts, Fp8Tensor cast) {
    remember(std::move(parts));
    scale_inv_ = at::Tensor();
    cast_ = std::move(cast);
}

at::Tensor ScaleHandOver::take(const std::vector<at::Tensor>& parts, const Fp8Quantizer& quantizer) {
    if (!scale_inv_.defined()) return at::Tensor();
    const at::Tensor scale_inv = std::move(scale_inv_);
    scale_inv_ = at::Tensor();
    return matches_delivery(parts, quantizer) ? scale_inv : at::Tensor();
}

std::optional<Fp8Tensor> ScaleHandOver::take_cast(const std::vector<at::Tensor>& parts, const Fp8Quantizer& quantizer) {
    if (!cast_) return std::nullopt;
    std::optional<Fp8Tensor> cast = std::move(cast_);
    cast_.reset();
    if (!matches_delivery(parts, quantizer)) return std::nullopt;
    return cast;
}

bool ScaleHandOver::matches_delivery(const std::vector<at::Tensor>& parts, const Fp8Quantizer& quantizer) {
    const std::vector<at::Tensor> delivered = std::move(parts_);
    parts_.clear();
    // The slot asked for, its scales not updated since the delivery.
    if (!request_ || request_->context != quantizer.context || request_->pass != quantizer.pass || request_->slot != quantizer.slot ||
        quantizer.context->scale_changes() != scale_changes_) {
        return false;
    }
    // The very tensors delivered, unchanged: the same storage and memory, each laid out alike (or both row-major: a view
    // of another shape over the same elements, as a module's reshape makes), the version counter (shared by views)
    // where it was.
    if (parts.size() != delivered.size()) return false;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        const at::Tensor& a = parts[i];
        const at::Tensor& b = delivered[i];
        if (!a.defined()) return false;
        const bool same_layout = (a.is_contiguous() && b.is_contiguous()) || (a.sizes() == b.sizes() && a.strides() == b.strides());
        if (!a.storage().is_alias_of(b.storage()) || a.data_ptr() != b.data_ptr() || a.numel() != b.numel() ||
            !same_layout || a._version() != versions_[i]) {
            return false;
        }
    }
    return true;
}

std::optional<GradientHandOver::Handed> GradientHandOver::take(const at::Tensor& dy) {
    if (!delivered_) return std::nullopt;
    std::optional<Handed> handed = std::move(delivered_);
    delivered_.reset();
    const at::Tensor dx = std::move(dx_);
    dx_ = at::Tensor();
    // The very gradient delivered, unchanged: the same storage and memory (a view of it, as the engine hands it on),
    // every element, row-major, and its version counter (shared by views) where it was (no in-place accumulation
    // since); an FP8 cast only while its slot's scale has not changed.
    if (!dy.defined() || !dy.storage().is_alias_of(dx.storage()) || dy.data_ptr() != dx.data_ptr() || dy.numel() != dx.numel() ||
        !dy.is_contiguous() || dy._version() != version_) {
        return std::nullopt;
    }
    if (request_ && request_->fp8 && request_->fp8->context->scale_changes() != scale_changes_) return std::nullopt;
    return handed;
}

std::vector<at::Tensor> apply_layer_norm_linear(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta,
                                                const at::Tensor& weight, const at::Tensor& bias, const LayerNormPlan& norm,
                                                const GemmPlan& gemm, bool layernorm_output, bool input_output,
                                                const HeadSplit& split, const std::shared_ptr<GradientHandOver>& input_grad,
                                                const std::shared_ptr<ScaleHandOver>& output_grad_scale) {
    if (split.active() && (x.dim() != 2 || x.size(0) != split.batch * split.seq || weight.size(0) != 3 * split.heads * split.head_dim)) {
        throw std::invalid_argument("apply_layer_norm_linear: the head split [" + std::to_string(split.batch) + ", " +
                                    std::to_string(split.seq) + ", 3, " + std::to_string(split.heads) + ", " +
                                    std::to_string(split.head_dim) + "] does not fit the rows and the output features");
    }
    return LayerNormLinearFunction::apply(x, gamma, maybe(beta), weight, maybe(bias), norm, gemm, layernorm_output, input_output,
                                          split, input_grad, output_grad_scale);
}

at::Tensor apply_layer_norm_mlp(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, const at::Tensor& fc1_weight,
                                const at::Tensor& fc1_bias, const at::Tensor& fc2_weight, const at::Tensor& fc2_bias,
                                const LayerNormPlan& norm, const GemmPlan& fc1, const GemmPlan& fc2, const at::Tensor& residual,
                                Activation activation, const std::shared_ptr<GradientHandOver>& input_grad,
                                const std::shared_ptr<GradientHandOver>& output_grad) {
    // x itself as the residual: one input, and its two gradients summed in the LayerNorm backward.
    const MaybeTensor b = maybe(beta);
    const MaybeTensor b1 = maybe(fc1_bias);
    const MaybeTensor b2 = maybe(fc2_bias);
    if (residual.defined() && residual.is_same(x)) {
        return LayerNormMlpFunction::apply(x, gamma, b, fc1_weight, b1, fc2_weight, b2, norm, fc1, fc2, activation, true, input_grad,
                                           output_grad);
    }
    if (residual.defined()) {
        return LayerNormMlpFunction::apply(x, gamma, b, fc1_weight, b1, fc2_weight, b2, norm, fc1, fc2, activation, false, input_grad,
                                           output_grad, residual);
    }
    return LayerNormMlpFunction::apply(x, gamma, b, fc1_weight, b1, fc2_weight, b2, norm, fc1, fc2, activation, false, input_grad,
                                       output_grad);
}

at::Tensor apply_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale, const TeOps& ops,
                           const std::shared_ptr<ScaleHandOver>& out_scale, const std::shared_ptr<ScaleHandOver>& grad_scale) {
    return AttentionFunction::apply(q, k, v, scale, &ops, out_scale, grad_scale);
}

at::Tensor apply_packed_attention(const at::Tensor& qkv, std::int64_t heads, std::int64_t kv_heads, double scale, const TeOps& ops,
                                  const std::shared_ptr<ScaleHandOver>& out_scale) {
    return PackedAttentionFunction::apply(qkv, heads, kv_heads, scale, &ops, out_scale);
}

at::Tensor apply_rotary_embedding(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, std::int64_t rotated_heads,
                                  const TeOps& ops, const std::shared_ptr<ScaleHandOver>& grad_scale) {
    return RotaryFunction::apply(x, cos, sin, rotated_heads, &ops, grad_scale);
}

}  // namespace tewb

// The fused ops' LayerNorm and GELU (FusedOpsImpl.h), with and without their FP8 outputs.
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>

#include "core/modules/ops/FusedOpsImpl.h"
#include "core/modules/ops/KernelTypes.h"
#include "core/modules/ops/ReferenceOps.h"
#include "tewb_kernels/activation.h"
#include "tewb_kernels/normalization.h"


namespace tewb::fused_ops {

LayerNormResult FusedOps::layer_norm_forward(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, double eps,
                                             at::ScalarType out_dtype) const {
    Misfit m = matrix_misfit(x, "x");
    if (!m) m = params_misfit(gamma, beta, x);
    if (!m && !float_or_bf16(out_dtype)) m = "the output dtype is not float32 or bfloat16";
    if (m) {
        return fall_back("layer_norm_forward", *m,
                         [&] { return reference_ops().layer_norm_forward(x, gamma, beta, eps, out_dtype); });
    }
    const std::int64_t rows = x.size(0);
    const std::int64_t hidden = x.size(1);
    LayerNormResult r;
    r.out = at::empty({rows, hidden}, x.options().dtype(out_dtype));
    r.mean = at::empty({rows}, x.options().dtype(at::kFloat));
    r.rstd = at::empty({rows}, x.options().dtype(at::kFloat));
    TEWB_KERNEL(x, (Tensors{x, gamma, beta}), (Tensors{r.out, r.mean, r.rstd}), layer_norm_forward, kernel_tensor(x),
                kernel_tensor(gamma), kernel_tensor(beta), static_cast<float>(eps), kernel_tensor(r.out), kernels::Tensor{},
                kernel_tensor(r.mean), kernel_tensor(r.rstd));
    return r;
}

LayerNormGrads FusedOps::layer_norm_backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean,
                                             const at::Tensor& rstd, const at::Tensor& gamma) const {
    return norm_backward(dy, x, mean, rstd, gamma, at::Tensor());
}

// The skip connection's gradient added to dx in the same kernel (layer_norm_backward_add).
LayerNormGrads FusedOps::layer_norm_backward_add(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean,
                                                 const at::Tensor& rstd, const at::Tensor& gamma,
                                                 const at::Tensor& dresidual) const {
    return norm_backward(dy, x, mean, rstd, gamma, dresidual);
}

// dy may differ from x in dtype: a float32 residual stream with a bfloat16 gradient under autocast.
// dresidual, when defined, is added to dx in the kernel.
Misfit FusedOps::norm_backward_misfit(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
                                      const at::Tensor& gamma, const at::Tensor& dresidual) const {
    Misfit m = matrix_misfit(x, "x");
    if (!m) m = matrix_misfit(dy, "dy");
    if (!m && dy.sizes() != x.sizes()) m = "dy and x differ in shape";
    if (!m) m = params_misfit(gamma, gamma, x);
    if (!m && (!stats_fit(mean, x) || !stats_fit(rstd, x))) m = "mean or rstd is not float32 [rows] on x's device";
    if (!m && dresidual.defined() &&
        (matrix_misfit(dresidual, "dresidual") || dresidual.sizes() != x.sizes() || dresidual.scalar_type() != x.scalar_type())) {
        m = "dresidual is not a row-major matrix of x's shape and dtype on x's device";
    }
    return m;
}

// dx as a Linear's output gradient too: its copy in the GEMMs' dtype (none where dx has it) and its column sums from
// the backward's own pass. Operands the kernel does not take: nothing (not a fallback: the Linear casts as it did).
std::optional<LayerNormGradsWithCast> FusedOps::layer_norm_backward_cast(const at::Tensor& dy, const at::Tensor& x,
                                                                         const at::Tensor& mean, const at::Tensor& rstd,
                                                                         const at::Tensor& gamma, const at::Tensor& dresidual,
                                                                         at::ScalarType dtype, bool with_bias_grad) const {
    if (norm_backward_misfit(dy, x, mean, rstd, gamma, dresidual) || !float_or_bf16(dtype)) return std::nullopt;
    const std::size_t rows = rows_of(x);
    const std::size_t hidden = cols_of(x);
    const bool copy = dtype != x.scalar_type();
    LayerNormGradsWithCast r;
    r.norm.dx = at::empty_like(x);
    r.norm.dgamma = at::empty_like(gamma);
    r.norm.dbeta = at::empty_like(gamma);
    r.cast.grad = copy ? at::empty(x.sizes(), x.options().dtype(dtype)) : r.norm.dx;
    // The kernel always sums; without a bias the sums are dropped (the same launch, a row of floats more).
    r.cast.bias_grad = at::empty({x.size(1)}, x.options().dtype(at::kFloat));
    const at::Tensor workspace = byte_buffer(kernels::layer_norm_backward_cast_dbias_workspace_bytes(rows, hidden), x);
    const at::Tensor grad = copy ? r.cast.grad : at::Tensor();
    TEWB_KERNEL(x, (Tensors{dy, x, mean, rstd, gamma, dresidual}), (Tensors{r.norm.dx, r.norm.dgamma, r.norm.dbeta, grad, r.cast.bias_grad}),
                layer_norm_backward_cast_dbias, kernel_tensor(dy), kernel_tensor(x), kernel_tensor(mean), kernel_tensor(rstd),
                kernel_tensor(gamma), kernel_tensor(r.norm.dx), kernel_tensor(dresidual), kernel_tensor(r.norm.dgamma),
                kernel_tensor(r.norm.dbeta), kernel_tensor(grad), kernel_tensor(r.cast.bias_grad), workspace_ref(workspace));
    if (!with_bias_grad) r.cast.bias_grad = at::Tensor();
    return r;
}

// dx as an FP8 Linear's output gradient too, under delayed scaling (the slot's scale known before the pass): its FP8
// copy, transposed copy and amax and its column sums from the backward's own pass. Under current scaling (and a
// calibrating step) the pass writes dx, its column sums and, from dx's amax, the slot's scale (the amax hand-off), and the
// Linear's cast follows: two launches where the backward, an amax launch and a cast with its sums were three.
std::optional<LayerNormGradsWithFp8> FusedOps::layer_norm_backward_quantize(const at::Tensor& dy, const at::Tensor& x,
                                                                            const at::Tensor& mean, const at::Tensor& rstd,
                                                                            const at::Tensor& gamma, const at::Tensor& dresidual,
                                                                            const Fp8Quantizer& quantizer, bool with_bias_grad) const {
    if (norm_backward_misfit(dy, x, mean, rstd, gamma, dresidual)) return std::nullopt;
    const std::size_t rows = rows_of(x);
    const std::size_t hidden = cols_of(x);
    if (fresh_scale_cast(x, quantizer)) {
        LayerNormGradsWithFp8 r;
        r.norm.dx = at::empty_like(x);
        r.norm.dgamma = at::empty_like(gamma);
        r.norm.dbeta = at::empty_like(gamma);
        r.fp8.bias_grad = at::empty({x.size(1)}, x.options().dtype(at::kFloat));
        const at::Tensor workspace = byte_buffer(kernels::layer_norm_backward_cast_dbias_workspace_bytes(rows, hidden), x);
        const FreshScale f = fresh_scale_item(r.norm.dx, quantizer);
        TEWB_KERNEL(x, (Tensors{dy, x, mean, rstd, gamma, dresidual, f.slot_amax}),
                    (Tensors{r.norm.dx, r.norm.dgamma, r.norm.dbeta, r.fp8.bias_grad, f.scale, f.own_scale_inv, f.slot_amax}),
                    layer_norm_backward_cast_dbias_current_scale, kernel_tensor(dy), kernel_tensor(x), kernel_tensor(mean),
                    kernel_tensor(rstd), kernel_tensor(gamma), kernel_tensor(r.norm.dx), kernel_tensor(dresidual),
                    kernel_tensor(r.norm.dgamma), kernel_tensor(r.norm.dbeta), fresh_scale_target(f), kernel_tensor(r.fp8.bias_grad),
                    workspace_ref(workspace));
        r.fp8.grad = cast_with_slot_scale(r.norm.dx, quantizer, /*with_transpose=*/true, f.own_scale_inv);
        if (!with_bias_grad) r.fp8.bias_grad = at::Tensor();
        return r;
    }
    if (!delayed_kernel_cast(x, quantizer)) return std::nullopt;
    LayerNormGradsWithFp8 r;
    r.norm.dx = at::empty_like(x);
    r.norm.dgamma = at::empty_like(gamma);
    r.norm.dbeta = at::empty_like(gamma);
    r.fp8.grad = empty_fp8(x, quantizer);
    r.fp8.bias_grad = at::empty({x.size(1)}, x.options().dtype(at::kFloat));
    const at::Tensor workspace = byte_buffer(kernels::layer_norm_backward_cast_dbias_workspace_bytes(rows, hidden), x);
    TEWB_KERNEL(x, (Tensors{dy, x, mean, rstd, gamma, dresidual}),
                (Tensors{r.norm.dx, r.norm.dgamma, r.norm.dbeta, r.fp8.grad.data, r.fp8.grad.transposed, r.fp8.bias_grad}),
                layer_norm_backward_quantize_dbias, kernel_tensor(dy), kernel_tensor(x), kernel_tensor(mean), kernel_tensor(rstd),
                kernel_tensor(gamma), kernel_tensor(r.norm.dx), kernel_tensor(dresidual), kernel_tensor(r.norm.dgamma),
                kernel_tensor(r.norm.dbeta), fp8_tensor(r.fp8.grad, quantizer), kernel_tensor(r.fp8.bias_grad), workspace_ref(workspace));
    hand_out_live_scale_inv(r.fp8.grad, quantizer);
    if (!with_bias_grad) r.fp8.bias_grad = at::Tensor();
    return r;
}

LayerNormGrads FusedOps::norm_backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
                                       const at::Tensor& gamma, const at::Tensor& dresidual) const {
    const bool add = dresidual.defined();
    const char* op = add ? "layer_norm_backward_add" : "layer_norm_backward";
    if (Misfit m = norm_backward_misfit(dy, x, mean, rstd, gamma, dresidual)) {
        return fall_back(op, *m, [&] {
            return add ? reference_ops().layer_norm_backward_add(dy, x, mean, rstd, gamma, dresidual)
                       : reference_ops().layer_norm_backward(dy, x, mean, rstd, gamma);
        });
    }
    const std::size_t rows = rows_of(x);
    const std::size_t hidden = cols_of(x);
    LayerNormGrads g;
    g.dx = at::empty_like(x);
    g.dgamma = at::empty_like(gamma);
    g.dbeta = at::empty_like(gamma);
    const std::size_t bytes = kernels::layer_norm_backward_workspace_bytes(rows, hidden);
    const at::Tensor workspace = byte_buffer(bytes, x);
    if (add) {
        TEWB_KERNEL(x, (Tensors{dy, x, mean, rstd, gamma, dresidual}), (Tensors{g.dx, g.dgamma, g.dbeta}),
                    layer_norm_backward_add, kernel_tensor(dy), kernel_tensor(x), kernel_tensor(mean), kernel_tensor(rstd),
                    kernel_tensor(gamma), kernel_tensor(g.dx), kernel_tensor(dresidual), kernel_tensor(g.dgamma),
                    kernel_tensor(g.dbeta), workspace_ref(workspace));
    } else {
        TEWB_KERNEL(x, (Tensors{dy, x, mean, rstd, gamma}), (Tensors{g.dx, g.dgamma, g.dbeta}), layer_norm_backward,
                    kernel_tensor(dy), kernel_tensor(x), kernel_tensor(mean), kernel_tensor(rstd), kernel_tensor(gamma),
                    kernel_tensor(g.dx), kernel_tensor(g.dgamma), kernel_tensor(g.dbeta), workspace_ref(workspace));
    }
    return g;
}

at::Tensor FusedOps::gelu_forward(const at::Tensor& x) const {
    if (Misfit m = matrix_misfit(x, "x")) {
        return fall_back("gelu_forward", *m, [&] { return reference_ops().gelu_forward(x); });
    }
    at::Tensor y = at::empty_like(x);
    TEWB_KERNEL(x, Tensors{x}, Tensors{y}, gelu_forward, kernel_tensor(x), kernel_tensor(y), kernels::Tensor{});
    return y;
}

at::Tensor FusedOps::gelu_backward(const at::Tensor& dy, const at::Tensor& x) const {
    Misfit m = matrix_misfit(x, "x");
    if (!m) m = matrix_misfit(dy, "dy");
    if (!m && (dy.sizes() != x.sizes() || dy.scalar_type() != x.scalar_type())) m = "dy and x differ in shape or dtype";
    if (m) return fall_back("gelu_backward", *m, [&] { return reference_ops().gelu_backward(dy, x); });
    at::Tensor dx = at::empty_like(x);
    TEWB_KERNEL(x, (Tensors{dy, x}), Tensors{dx}, gelu_backward, kernel_tensor(dy), kernel_tensor(x), kernel_tensor(dx), kernels::Tensor{},
                kernels::Tensor{}, kernels::Workspace{});
    return dx;
}

// The LayerNorm kernel writes the FP8 GEMM input, its transposed copy and its amax (into the slot's
// staging entry) in one pass; the high-precision output only when kept. Current scaling (and a calibrating step): the
// kernel writes the output and, from its amax, the slot's scale (layer_norm_forward_current_scale, the amax hand-off),
// then the cast reads the output once: two launches where the forward, an amax launch and the cast were three.
Fp8Tensor FusedOps::layer_norm_quantize(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, double eps,
                                        at::ScalarType out_dtype, const Fp8Quantizer& quantizer, bool keep_output,
                                        LayerNormResult& ln) const {
    if (fresh_scale_cast(x, quantizer) && float_or_bf16(out_dtype) && !params_misfit(gamma, beta, x)) {
        ln.out = at::empty({x.size(0), x.size(1)}, x.options().dtype(out_dtype));
        ln.mean = at::empty({x.size(0)}, x.options().dtype(at::kFloat));
        ln.rstd = at::empty({x.size(0)}, x.options().dtype(at::kFloat));
        const FreshScale f = fresh_scale_item(ln.out, quantizer);
        TEWB_KERNEL(x, (Tensors{x, gamma, beta, f.slot_amax}), (Tensors{ln.out, ln.mean, ln.rstd, f.scale, f.own_scale_inv, f.slot_amax}),
                    layer_norm_forward_current_scale, kernel_tensor(x), kernel_tensor(gamma), kernel_tensor(beta),
                    static_cast<float>(eps), kernel_tensor(ln.out), fresh_scale_target(f), kernel_tensor(ln.mean),
                    kernel_tensor(ln.rstd));
        Fp8Tensor q = cast_with_slot_scale(ln.out, quantizer, /*with_transpose=*/true, f.own_scale_inv);
        if (!keep_output) ln.out = at::Tensor();
        return q;
    }
    if (!delayed_kernel_cast(x, quantizer) || !float_or_bf16(out_dtype) || params_misfit(gamma, beta, x)) {
        return TeOps::layer_norm_quantize(x, gamma, beta, eps, out_dtype, quantizer, keep_output, ln);
    }
    const std::int64_t rows = x.size(0);
    const std::int64_t hidden = x.size(1);
    ln.out = keep_output ? at::empty({rows, hidden}, x.options().dtype(out_dtype)) : at::Tensor();
    ln.mean = at::empty({rows}, x.options().dtype(at::kFloat));
    ln.rstd = at::empty({rows}, x.options().dtype(at::kFloat));
    Fp8Tensor q = empty_fp8(x, quantizer);
    TEWB_KERNEL(x, (Tensors{x, gamma, beta}), (Tensors{ln.out, ln.mean, ln.rstd, q.data, q.transposed}), layer_norm_forward,
                kernel_tensor(x), kernel_tensor(gamma), kernel_tensor(beta), static_cast<float>(eps), kernel_tensor(ln.out),
                fp8_tensor(q, quantizer), kernel_tensor(ln.mean), kernel_tensor(ln.rstd));
    hand_out_live_scale_inv(q, quantizer);
    return q;
}

// One GELU pass writes fc2's FP8 input and its transposed copy, no high-precision activation. Current scaling (and a
// calibrating step): the GELU writes its output and, from its amax, the slot's scale (gelu_forward_current_scale, the
// amax hand-off), then the cast.
Fp8Tensor FusedOps::gelu_quantize(const at::Tensor& x, const Fp8Quantizer& quantizer) const {
    if (fresh_scale_cast(x, quantizer)) {
        const at::Tensor y = at::empty_like(x);
        const FreshScale f = fresh_scale_item(y, quantizer);
        TEWB_KERNEL(x, (Tensors{x, f.slot_amax}), (Tensors{y, f.scale, f.own_scale_inv, f.slot_amax}), gelu_forward_current_scale,
                    kernel_tensor(x), kernel_tensor(y), fresh_scale_target(f));
        return cast_with_slot_scale(y, quantizer, /*with_transpose=*/true, f.own_scale_inv);
    }
    if (!delayed_kernel_cast(x, quantizer)) return TeOps::gelu_quantize(x, quantizer);
    Fp8Tensor q = empty_fp8(x, quantizer);
    const kernels::Tensor fp8 = fp8_tensor(q, quantizer);
    TEWB_KERNEL(x, Tensors{x}, (Tensors{q.data, q.transposed}), gelu_forward, kernel_tensor(x), kernels::Tensor{}, fp8);
    hand_out_live_scale_inv(q, quantizer);
    return q;
}

// One pass over dy and GELU's input: the FP8 gradient, its transposed copy, its amax and fc1's bias
// gradient (float32, two-stage reduction).
// Block scaling, current scaling and a calibrating step: the GELU backward writes the gradient and fc1's bias gradient
// in one launch, the cast follows (the block cast's blocks, or current scaling's scale, need the whole gradient's amax
// first; under current scaling the backward takes that amax and writes the scale itself, gelu_backward_current_scale).
Fp8GradWithBias FusedOps::gelu_backward_quantize(const at::Tensor& dy, const at::Tensor& x, const Fp8Quantizer& quantizer) const {
    const bool fits =
        !matrix_misfit(x, "x") && !matrix_misfit(dy, "dy") && dy.sizes() == x.sizes() && dy.scalar_type() == x.scalar_type();
    const bool blocks = quantizer.context->recipe().scaling == ScalingKind::Block;
    if (fits && (blocks || fresh_scale_cast(x, quantizer))) {
        const std::size_t rows = rows_of(x);
        const std::size_t cols = cols_of(x);
        const std::size_t bytes = kernels::gelu_backward_workspace_bytes(rows, cols);
        const at::Tensor workspace = byte_buffer(bytes, x);
        const at::Tensor dx = at::empty_like(x);
        at::Tensor bias_grad = at::empty({x.size(1)}, x.options().dtype(at::kFloat));
        if (blocks) {
            TEWB_KERNEL(x, (Tensors{dy, x}), (Tensors{dx, bias_grad}), gelu_backward, kernel_tensor(dy), kernel_tensor(x),
                        kernel_tensor(dx), kernels::Tensor{}, kernel_tensor(bias_grad), workspace_ref(workspace));
            return {quantize_blocks(dx, quantizer, /*with_transpose=*/true), bias_grad};
        }
        const FreshScale f = fresh_scale_item(dx, quantizer);
        TEWB_KERNEL(x, (Tensors{dy, x, f.slot_amax}), (Tensors{dx, bias_grad, f.scale, f.own_scale_inv, f.slot_amax}),
                    gelu_backward_current_scale, kernel_tensor(dy), kernel_tensor(x), kernel_tensor(dx), fresh_scale_target(f),
                    kernel_tensor(bias_grad), workspace_ref(workspace));
        return {cast_with_slot_scale(dx, quantizer, /*with_transpose=*/true, f.own_scale_inv), bias_grad};
    }
    if (!fits || !delayed_kernel_cast(x, quantizer)) return TeOps::gelu_backward_quantize(dy, x, quantizer);
    const std::size_t rows = rows_of(x);
    const std::size_t cols = cols_of(x);
    const std::size_t bytes = kernels::gelu_backward_workspace_bytes(rows, cols);
    Fp8GradWithBias r = empty_grad_with_bias(x, quantizer);
    const at::Tensor workspace = byte_buffer(bytes, x);
    const kernels::Tensor fp8 = fp8_tensor(r.grad, quantizer);
    TEWB_KERNEL(x, (Tensors{dy, x}), (Tensors{r.grad.data, r.grad.transposed, r.bias_grad}), gelu_backward, kernel_tensor(dy),
                kernel_tensor(x), kernels::Tensor{}, fp8, kernel_tensor(r.bias_grad), workspace_ref(workspace));
    hand_out_live_scale_inv(r.grad, quantizer);
    return r;
}

}  // namespace tewb::fused_ops

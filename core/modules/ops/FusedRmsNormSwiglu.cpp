// The fused ops' RMSNorm and SwiGLU (FusedOpsImpl.h), with and without their FP8 outputs: the Llama block's
// counterparts of FusedNormActivation.cpp's LayerNorm and GELU.
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>

#include "core/modules/ops/FusedOpsImpl.h"
#include "core/modules/ops/KernelTypes.h"
#include "core/modules/ops/ReferenceOps.h"
#include "tewb_kernels/activation.h"
#include "tewb_kernels/normalization.h"


namespace tewb::fused_ops {

namespace {

// SwiGLU's input [rows, 2 · cols] as [gate | up]: an even, non-zero width.
Misfit swiglu_width_misfit(const at::Tensor& in) {
    if (in.size(1) % 2 == 0) return std::nullopt;
    std::string reason = "SwiGLU's input has an odd width (";
    reason += std::to_string(in.size(1));
    reason += ")";
    return reason;
}

}  // namespace

RmsNormResult FusedOps::rms_norm_forward(const at::Tensor& x, const at::Tensor& gamma, double eps, at::ScalarType out_dtype) const {
    Misfit m = matrix_misfit(x, "x");
    if (!m) m = params_misfit(gamma, gamma, x);
    if (!m && !float_or_bf16(out_dtype)) m = "the output dtype is not float32 or bfloat16";
    if (m) return fall_back("rms_norm_forward", *m, [&] { return reference_ops().rms_norm_forward(x, gamma, eps, out_dtype); });
    RmsNormResult r;
    r.out = at::empty({x.size(0), x.size(1)}, x.options().dtype(out_dtype));
    r.rstd = at::empty({x.size(0)}, x.options().dtype(at::kFloat));
    TEWB_KERNEL(x, (Tensors{x, gamma}), (Tensors{r.out, r.rstd}), rms_norm_forward, kernel_tensor(x), kernel_tensor(gamma),
                static_cast<float>(eps), kernel_tensor(r.out), kernels::Tensor{}, kernel_tensor(r.rstd));
    return r;
}

RmsNormGrads FusedOps::rms_norm_backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd,
                                         const at::Tensor& gamma) const {
    return rms_backward(dy, x, rstd, gamma, at::Tensor());
}

RmsNormGrads FusedOps::rms_norm_backward_add(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd,
                                             const at::Tensor& gamma, const at::Tensor& dresidual) const {
    return rms_backward(dy, x, rstd, gamma, dresidual);
}

// Why the RMSNorm backward's kernels do not take these operands; nothing when they do.
Misfit FusedOps::rms_backward_misfit(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd, const at::Tensor& gamma,
                                     const at::Tensor& dresidual) const {
    Misfit m = matrix_misfit(x, "x");
    if (!m) m = matrix_misfit(dy, "dy");
    if (!m && dy.sizes() != x.sizes()) m = "dy and x differ in shape";
    if (!m) m = params_misfit(gamma, gamma, x);
    if (!m && !stats_fit(rstd, x)) m = "rstd is not float32 [rows] on x's device";
    if (!m && dresidual.defined() &&
        (matrix_misfit(dresidual, "dresidual") || dresidual.sizes() != x.sizes() || dresidual.scalar_type() != x.scalar_type())) {
        m = "dresidual is not a row-major matrix of x's shape and dtype on x's device";
    }
    return m;
}

// dx as a BF16 Linear's output gradient too: its copy in the GEMMs' dtype (none where dx has it) from the backward's own
// launch. Operands the kernel does not take, or a bias gradient asked for: nothing (the Linear casts as it did).
std::optional<LayerNormGradsWithCast> FusedOps::rms_norm_backward_cast(const at::Tensor& dy, const at::Tensor& x,
                                                                       const at::Tensor& rstd, const at::Tensor& gamma,
                                                                       const at::Tensor& dresidual, at::ScalarType dtype,
                                                                       bool with_bias_grad) const {
    if (with_bias_grad || rms_backward_misfit(dy, x, rstd, gamma, dresidual) || !float_or_bf16(dtype)) return std::nullopt;
    LayerNormGradsWithCast r;
    if (dtype == x.scalar_type()) {  // nothing to copy: the plain backward's dx is the Linear's gradient
        RmsNormGrads g = rms_backward(dy, x, rstd, gamma, dresidual);
        r.norm = {g.dx, std::move(g.dgamma), at::Tensor()};
        r.cast.grad = std::move(g.dx);
        return r;
    }
    r.norm.dx = at::empty_like(x);
    r.norm.dgamma = at::empty_like(gamma);
    r.cast.grad = at::empty(x.sizes(), x.options().dtype(dtype));
    const at::Tensor workspace = byte_buffer(kernels::rms_norm_backward_workspace_bytes(rows_of(x), cols_of(x)), x);
    TEWB_KERNEL(x, (Tensors{dy, x, rstd, gamma, dresidual}), (Tensors{r.norm.dx, r.norm.dgamma, r.cast.grad}), rms_norm_backward_cast,
                kernel_tensor(dy), kernel_tensor(x), kernel_tensor(rstd), kernel_tensor(gamma), kernel_tensor(r.norm.dx),
                kernel_tensor(dresidual), kernel_tensor(r.norm.dgamma), kernel_tensor(r.cast.grad), workspace_ref(workspace));
    return r;
}

// dx as an FP8 Linear's output gradient too. Under delayed scaling (the slot's scale known before the pass): its FP8
// copy, transposed copy and amax from the backward's own launch (rms_norm_backward_quantize). Under current scaling (and
// a calibrating step) the pass writes dx and, from dx's amax, the slot's scale (the amax hand-off), and the Linear's cast
// follows. No bias gradient (RMSNorm's models have none): nothing where one is asked for.
std::optional<LayerNormGradsWithFp8> FusedOps::rms_norm_backward_quantize(const at::Tensor& dy, const at::Tensor& x,
                                                                          const at::Tensor& rstd, const at::Tensor& gamma,
                                                                          const at::Tensor& dresidual, const Fp8Quantizer& quantizer,
                                                                          bool with_bias_grad) const {
    if (with_bias_grad || rms_backward_misfit(dy, x, rstd, gamma, dresidual)) return std::nullopt;
    LayerNormGradsWithFp8 r;
    const at::Tensor workspace = byte_buffer(kernels::rms_norm_backward_workspace_bytes(rows_of(x), cols_of(x)), x);
    if (fresh_scale_cast(x, quantizer)) {
        r.norm.dx = at::empty_like(x);
        r.norm.dgamma = at::empty_like(gamma);
        const FreshScale f = fresh_scale_item(r.norm.dx, quantizer);
        TEWB_KERNEL(x, (Tensors{dy, x, rstd, gamma, dresidual, f.slot_amax}),
                    (Tensors{r.norm.dx, r.norm.dgamma, f.scale, f.own_scale_inv, f.slot_amax}), rms_norm_backward_current_scale,
                    kernel_tensor(dy), kernel_tensor(x), kernel_tensor(rstd), kernel_tensor(gamma), kernel_tensor(r.norm.dx),
                    kernel_tensor(dresidual), kernel_tensor(r.norm.dgamma), fresh_scale_target(f), workspace_ref(workspace));
        r.fp8.grad = cast_with_slot_scale(r.norm.dx, quantizer, /*with_transpose=*/true, f.own_scale_inv);
        return r;
    }
    if (!delayed_kernel_cast(x, quantizer)) return std::nullopt;
    r.norm.dx = at::empty_like(x);
    r.norm.dgamma = at::empty_like(gamma);
    r.fp8.grad = empty_fp8(x, quantizer);
    TEWB_KERNEL(x, (Tensors{dy, x, rstd, gamma, dresidual}), (Tensors{r.norm.dx, r.norm.dgamma, r.fp8.grad.data, r.fp8.grad.transposed}),
                rms_norm_backward_quantize, kernel_tensor(dy), kernel_tensor(x), kernel_tensor(rstd), kernel_tensor(gamma),
                kernel_tensor(r.norm.dx), kernel_tensor(dresidual), kernel_tensor(r.norm.dgamma), fp8_tensor(r.fp8.grad, quantizer),
                workspace_ref(workspace));
    hand_out_live_scale_inv(r.fp8.grad, quantizer);
    return r;
}

// As norm_backward (FusedNormActivation.cpp): dy may be float32 over a bfloat16 x or the other way; a defined
// dresidual is added to dx in the kernel.
RmsNormGrads FusedOps::rms_backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd, const at::Tensor& gamma,
                                    const at::Tensor& dresidual) const {
    const bool add = dresidual.defined();
    const char* op = add ? "rms_norm_backward_add" : "rms_norm_backward";
    if (Misfit m = rms_backward_misfit(dy, x, rstd, gamma, dresidual)) {
        return fall_back(op, *m, [&] {
            return add ? reference_ops().rms_norm_backward_add(dy, x, rstd, gamma, dresidual)
                       : reference_ops().rms_norm_backward(dy, x, rstd, gamma);
        });
    }
    RmsNormGrads g;
    g.dx = at::empty_like(x);
    g.dgamma = at::empty_like(gamma);
    const std::size_t bytes = kernels::rms_norm_backward_workspace_bytes(rows_of(x), cols_of(x));
    const at::Tensor workspace = byte_buffer(bytes, x);
    if (add) {
        TEWB_KERNEL(x, (Tensors{dy, x, rstd, gamma, dresidual}), (Tensors{g.dx, g.dgamma}), rms_norm_backward_add,
                    kernel_tensor(dy), kernel_tensor(x), kernel_tensor(rstd), kernel_tensor(gamma), kernel_tensor(g.dx),
                    kernel_tensor(dresidual), kernel_tensor(g.dgamma), workspace_ref(workspace));
    } else {
        TEWB_KERNEL(x, (Tensors{dy, x, rstd, gamma}), (Tensors{g.dx, g.dgamma}), rms_norm_backward, kernel_tensor(dy),
                    kernel_tensor(x), kernel_tensor(rstd), kernel_tensor(gamma), kernel_tensor(g.dx), kernel_tensor(g.dgamma),
                    workspace_ref(workspace));
    }
    return g;
}

// The RMSNorm kernel writes the FP8 GEMM input, its transposed copy and its amax (into the slot's staging entry)
// in one pass; the high-precision output only when kept. Current scaling (and a calibrating step): the kernel writes the
// output and, from its amax, the slot's scale (rms_norm_forward_current_scale, the amax hand-off), then the cast; other
// recipes compose the fused forward and cast.
Fp8Tensor FusedOps::rms_norm_quantize(const at::Tensor& x, const at::Tensor& gamma, double eps, at::ScalarType out_dtype,
                                      const Fp8Quantizer& quantizer, bool keep_output, RmsNormResult& rn) const {
    if (fresh_scale_cast(x, quantizer) && float_or_bf16(out_dtype) && !params_misfit(gamma, gamma, x)) {
        rn.out = at::empty({x.size(0), x.size(1)}, x.options().dtype(out_dtype));
        rn.rstd = at::empty({x.size(0)}, x.options().dtype(at::kFloat));
        const FreshScale f = fresh_scale_item(rn.out, quantizer);
        TEWB_KERNEL(x, (Tensors{x, gamma, f.slot_amax}), (Tensors{rn.out, rn.rstd, f.scale, f.own_scale_inv, f.slot_amax}),
                    rms_norm_forward_current_scale, kernel_tensor(x), kernel_tensor(gamma), static_cast<float>(eps),
                    kernel_tensor(rn.out), fresh_scale_target(f), kernel_tensor(rn.rstd));
        Fp8Tensor q = cast_with_slot_scale(rn.out, quantizer, /*with_transpose=*/true, f.own_scale_inv);
        if (!keep_output) rn.out = at::Tensor();
        return q;
    }
    if (!delayed_kernel_cast(x, quantizer) || !float_or_bf16(out_dtype) || params_misfit(gamma, gamma, x)) {
        return TeOps::rms_norm_quantize(x, gamma, eps, out_dtype, quantizer, keep_output, rn);
    }
    rn.out = keep_output ? at::empty({x.size(0), x.size(1)}, x.options().dtype(out_dtype)) : at::Tensor();
    rn.rstd = at::empty({x.size(0)}, x.options().dtype(at::kFloat));
    Fp8Tensor q = empty_fp8(x, quantizer);
    TEWB_KERNEL(x, (Tensors{x, gamma}), (Tensors{rn.out, rn.rstd, q.data, q.transposed}), rms_norm_forward, kernel_tensor(x),
                kernel_tensor(gamma), static_cast<float>(eps), kernel_tensor(rn.out), fp8_tensor(q, quantizer),
                kernel_tensor(rn.rstd));
    hand_out_live_scale_inv(q, quantizer);
    return q;
}

at::Tensor FusedOps::swiglu_forward(const at::Tensor& in) const {
    Misfit m = matrix_misfit(in, "in");
    if (!m) m = swiglu_width_misfit(in);
    if (m) return fall_back("swiglu_forward", *m, [&] { return reference_ops().swiglu_forward(in); });
    at::Tensor y = at::empty({in.size(0), in.size(1) / 2}, in.options());
    TEWB_KERNEL(in, Tensors{in}, Tensors{y}, swiglu_forward, kernel_tensor(in), kernel_tensor(y), kernels::Tensor{});
    return y;
}

Misfit FusedOps::swiglu_backward_misfit(const at::Tensor& dy, const at::Tensor& in) const {
    Misfit m = matrix_misfit(in, "in");
    if (!m) m = swiglu_width_misfit(in);
    if (!m) m = matrix_misfit(dy, "dy");
    if (!m && (dy.size(0) != in.size(0) || 2 * dy.size(1) != in.size(1) || dy.scalar_type() != in.scalar_type())) {
        m = "dy is not [rows, cols] of in's dtype for in [rows, 2 · cols]";
    }
    return m;
}

at::Tensor FusedOps::swiglu_backward(const at::Tensor& dy, const at::Tensor& in) const {
    if (Misfit m = swiglu_backward_misfit(dy, in)) {
        return fall_back("swiglu_backward", *m, [&] { return reference_ops().swiglu_backward(dy, in); });
    }
    at::Tensor din = at::empty_like(in);
    TEWB_KERNEL(in, (Tensors{dy, in}), Tensors{din}, swiglu_backward, kernel_tensor(dy), kernel_tensor(in), kernel_tensor(din),
                kernels::Tensor{});
    return din;
}

// One SwiGLU pass writes the down projection's FP8 input and its transposed copy, no high-precision activation. Current
// scaling (and a calibrating step): the pass writes y and, from its amax, the slot's scale (the amax hand-off), then the
// cast.
Fp8Tensor FusedOps::swiglu_quantize(const at::Tensor& in, const Fp8Quantizer& quantizer) const {
    if (fresh_scale_cast(in, quantizer) && !swiglu_width_misfit(in)) {
        const at::Tensor y = at::empty({in.size(0), in.size(1) / 2}, in.options());
        const FreshScale f = fresh_scale_item(y, quantizer);
        TEWB_KERNEL(in, (Tensors{in, f.slot_amax}), (Tensors{y, f.scale, f.own_scale_inv, f.slot_amax}), swiglu_forward_current_scale,
                    kernel_tensor(in), kernel_tensor(y), fresh_scale_target(f));
        return cast_with_slot_scale(y, quantizer, /*with_transpose=*/true, f.own_scale_inv);
    }
    if (!delayed_kernel_cast(in, quantizer) || swiglu_width_misfit(in)) return TeOps::swiglu_quantize(in, quantizer);
    const std::int64_t rows = in.size(0);
    const std::int64_t cols = in.size(1) / 2;
    Fp8Tensor q;
    q.dtype = quantizer.dtype();
    q.data = at::empty({rows, cols}, in.options().dtype(to_scalar_type(q.dtype)));
    q.transposed = at::empty({cols, rows}, q.data.options());
    const kernels::Tensor fp8 = fp8_tensor(q, quantizer);
    TEWB_KERNEL(in, Tensors{in}, (Tensors{q.data, q.transposed}), swiglu_forward, kernel_tensor(in), kernels::Tensor{}, fp8);
    hand_out_live_scale_inv(q, quantizer);
    return q;
}

// One pass over dy and fc1's output: fc1's FP8 gradient [d gate | d up], its transposed copy and its amax (no
// bias: Llama's projections have none). Current scaling (and a calibrating step): the pass writes din and its scale (the
// amax hand-off), then the cast. Other recipes compose the fused backward and cast.
Fp8Tensor FusedOps::swiglu_backward_quantize(const at::Tensor& dy, const at::Tensor& in, const Fp8Quantizer& quantizer) const {
    if (!swiglu_backward_misfit(dy, in) && fresh_scale_cast(in, quantizer)) {
        const at::Tensor din = at::empty_like(in);
        const FreshScale f = fresh_scale_item(din, quantizer);
        TEWB_KERNEL(in, (Tensors{dy, in, f.slot_amax}), (Tensors{din, f.scale, f.own_scale_inv, f.slot_amax}),
                    swiglu_backward_current_scale, kernel_tensor(dy), kernel_tensor(in), kernel_tensor(din), fresh_scale_target(f));
        return cast_with_slot_scale(din, quantizer, /*with_transpose=*/true, f.own_scale_inv);
    }
    if (swiglu_backward_misfit(dy, in) || !delayed_kernel_cast(in, quantizer)) {
        return TeOps::swiglu_backward_quantize(dy, in, quantizer);
    }
    Fp8Tensor q = empty_fp8(in, quantizer);
    const kernels::Tensor fp8 = fp8_tensor(q, quantizer);
    TEWB_KERNEL(in, (Tensors{dy, in}), (Tensors{q.data, q.transposed}), swiglu_backward, kernel_tensor(dy), kernel_tensor(in),
                kernels::Tensor{}, fp8);
    hand_out_live_scale_inv(q, quantizer);
    return q;
}

}  // namespace tewb::fused_ops

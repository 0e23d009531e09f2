// The fused ops' causal attention (FusedOpsImpl.h): kernels/attention's forward and backward, one launch each, over
// q, k and v where they lie (views of the fused qkv projection; grouped queries too) and the gradients written in the
// projection's layout;
// under current scaling (and a calibrating step) with the next cast's scale written by the same launch (the amax hand-off).
#include <climits>
#include <cstdint>
#include <string>

#include <ATen/ops/empty.h>

#include "core/modules/ops/FusedOpsImpl.h"
#include "core/modules/ops/KernelTypes.h"
#include "tewb_kernels/attention.h"

namespace tewb::fused_ops {

namespace {

// t [batch, seq, heads, d] as the kernels' matrix [batch · seq, heads · d] with its token stride.
kernels::Tensor token_matrix(const at::Tensor& t) {
    kernels::Tensor m = kernels::input(t.data_ptr(), kernel_dtype(t.scalar_type()), static_cast<std::size_t>(t.size(0) * t.size(1)),
                                       static_cast<std::size_t>(t.size(2) * t.size(3)));
    m.row_stride = static_cast<std::size_t>(token_row_stride(t).value_or(0));
    return m;
}

kernels::AttentionHeads heads_of(const at::Tensor& q, const at::Tensor& k, double scale) {
    return {static_cast<std::size_t>(q.size(1)), static_cast<std::size_t>(q.size(2)), static_cast<float>(scale),
            static_cast<std::size_t>(k.size(2))};
}

}  // namespace

bool FusedOps::owns_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) const {
    if (q.dim() != 4 || q.numel() == 0 || k.dim() != 4 || k.sizes() != v.sizes()) return false;
    // Grouped queries: k and v with fewer heads, a divisor of q's (each serves as many query heads).
    if (k.size(0) != q.size(0) || k.size(1) != q.size(1) || k.size(3) != q.size(3) || k.size(2) == 0 ||
        q.size(2) % k.size(2) != 0) {
        return false;
    }
    for (const at::Tensor* t : {&q, &k, &v}) {
        if (device_misfit(*t, "t") || t->device() != q.device() || t->scalar_type() != at::kBFloat16) return false;
        // The kernels' checks: row strides and rows in 32 bits.
        const std::optional<std::int64_t> stride = token_row_stride(*t);
        if (!stride || *stride > INT32_MAX) return false;
    }
    // The grid's blocks (one per sequence and head) and the matrices' rows in 32 bits, as the kernels count them.
    if (q.size(0) * q.size(1) > INT32_MAX || q.size(0) * q.size(2) > INT32_MAX) return false;
    return !kernels::attention_refusal(static_cast<std::size_t>(q.size(1)), static_cast<std::size_t>(q.size(3)));
}

AttentionResult FusedOps::attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale,
                                            const Fp8Quantizer* out_scale) const {
    if (!owns_attention(q, k, v)) {
        return fall_back("attention_forward", "q, k, v do not fit kernels/attention (owns_attention)",
                         [&] { return TeOps::attention_forward(q, k, v, scale, out_scale); });
    }
    const std::int64_t batch = q.size(0), seq = q.size(1), cols = q.size(2) * q.size(3);
    const at::Tensor out = at::empty({batch, seq, cols}, q.options());
    const at::Tensor lse = at::empty({batch * q.size(2), seq}, q.options().dtype(at::kFloat));
    const at::Tensor rows = out.view({batch * seq, cols});
    if (out_scale != nullptr && fresh_scale_cast(rows, *out_scale)) {
        const FreshScale f = fresh_scale_item(rows, *out_scale);
        TEWB_KERNEL(q, (Tensors{q, k, v, f.slot_amax}), (Tensors{out, lse, f.scale, f.own_scale_inv, f.slot_amax}),
                    attention_forward_current_scale, token_matrix(q), token_matrix(k), token_matrix(v), heads_of(q, k, scale),
                    kernel_tensor(rows), kernel_tensor(lse), fresh_scale_target(f));
        return {out, lse, f.own_scale_inv};
    }
    TEWB_KERNEL(q, (Tensors{q, k, v}), (Tensors{out, lse}), attention_forward, token_matrix(q), token_matrix(k), token_matrix(v),
                heads_of(q, k, scale), kernel_tensor(rows), kernel_tensor(lse));
    return {out, lse, at::Tensor()};
}

AttentionGrads FusedOps::attention_backward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                            const AttentionResult& forward, const at::Tensor& d_out, double scale,
                                            const Fp8Quantizer* grad_scale) const {
    const std::int64_t batch = q.size(0), seq = q.size(1), heads = q.size(2), kv_heads = k.size(2), d = q.size(3);
    const at::Tensor dy = d_out.reshape({batch * seq, heads * d}).contiguous();
    if (!owns_attention(q, k, v) || dy.scalar_type() != at::kBFloat16 || device_misfit(dy, "d_out") ||
        forward.out.scalar_type() != at::kBFloat16 || !forward.out.is_contiguous() || !forward.lse.is_contiguous()) {
        return fall_back("attention_backward", "q, k, v, the output or its gradient do not fit kernels/attention",
                         [&] { return TeOps::attention_backward(q, k, v, forward, d_out, scale, grad_scale); });
    }
    // The qkv projection's gradient layout: each token's q, k and v gradients side by side.
    const at::Tensor stacked = at::empty({batch, seq, heads + 2 * kv_heads, d}, q.options());
    AttentionGrads g{stacked.narrow(2, 0, heads), stacked.narrow(2, heads, kv_heads), stacked.narrow(2, heads + kv_heads, kv_heads),
                     at::Tensor()};
    const at::Tensor whole = stacked.view({batch * seq, (heads + 2 * kv_heads) * d});
    // Grouped queries: dk's and dv's float32 sums over each group (none without).
    const at::Tensor workspace = byte_buffer(
        kernels::attention_backward_workspace_bytes(static_cast<std::size_t>(batch * seq), static_cast<std::size_t>(heads * d),
                                                    heads_of(q, k, scale)),
        q);
    const kernels::Workspace scratch = workspace.numel() == 0 ? kernels::Workspace{} : workspace_ref(workspace);
    if (grad_scale != nullptr && fresh_scale_cast(whole, *grad_scale)) {
        const FreshScale f = fresh_scale_item(whole, *grad_scale);
        TEWB_KERNEL(q, (Tensors{q, k, v, forward.out, dy, forward.lse, f.slot_amax}),
                    (Tensors{stacked, f.scale, f.own_scale_inv, f.slot_amax}), attention_backward_current_scale, token_matrix(q),
                    token_matrix(k), token_matrix(v), kernel_tensor(forward.out.view({batch * seq, heads * d})), kernel_tensor(dy),
                    kernel_tensor(forward.lse), heads_of(q, k, scale), token_matrix(g.dq), token_matrix(g.dk), token_matrix(g.dv),
                    scratch, fresh_scale_target(f));
        g.scale_inv = f.own_scale_inv;
        return g;
    }
    TEWB_KERNEL(q, (Tensors{q, k, v, forward.out, dy, forward.lse}), Tensors{stacked}, attention_backward, token_matrix(q),
                token_matrix(k), token_matrix(v), kernel_tensor(forward.out.view({batch * seq, heads * d})), kernel_tensor(dy),
                kernel_tensor(forward.lse), heads_of(q, k, scale), token_matrix(g.dq), token_matrix(g.dk), token_matrix(g.dv),
                scratch);
    return g;
}

}  // namespace tewb::fused_ops

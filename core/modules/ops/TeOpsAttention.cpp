// The reference numerics of the causal attention (TeOps.h): LibTorch ops in float32 over [batch, heads, seq, seq]
// scores, the results in q's dtype. The fused ops' kernels (kernels/attention) are checked against this; the modules
// call it only through ops that own the attention (this default does not: they use scaled_dot_product_attention).

#include "core/modules/ops/TeOps.h"

#include <limits>

#include <ATen/ops/cat.h>
#include <ATen/ops/logsumexp.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/repeat_interleave.h>

namespace tewb {

namespace {

// [batch, seq, heads, d] → float32 [batch, heads, seq, d].
at::Tensor heads_first(const at::Tensor& t) {
    return t.to(at::kFloat).transpose(1, 2);
}

// k or v [batch, seq, kv_heads, d] with each key/value head repeated for the query heads it serves (grouped queries:
// query head h reads key/value head h / (heads / kv_heads), as LibTorch's enable_gqa).
at::Tensor for_each_query_head(const at::Tensor& t, std::int64_t heads) {
    const std::int64_t group = heads / t.size(2);
    return group == 1 ? t : at::repeat_interleave(t, group, 2);
}

// A gradient [batch, heads, seq, d] of the repeated heads summed back onto the kv_heads they repeat.
at::Tensor onto_kv_heads(const at::Tensor& g, std::int64_t kv_heads) {
    const std::int64_t group = g.size(1) / kv_heads;
    if (group == 1) return g;
    return g.reshape({g.size(0), kv_heads, group, g.size(2), g.size(3)}).sum(2);
}

// Scaled scores with the keys after each query at −inf: [batch, heads, seq, seq].
at::Tensor causal_scores(const at::Tensor& q, const at::Tensor& k, double scale) {
    const std::int64_t seq = q.size(1);
    const at::Tensor s = at::matmul(heads_first(q), heads_first(k).transpose(2, 3)) * scale;
    const at::Tensor future = at::ones({seq, seq}, q.options().dtype(at::kBool)).triu(1);
    return s.masked_fill(future, -std::numeric_limits<float>::infinity());
}

}  // namespace

bool TeOps::owns_attention(const at::Tensor&, const at::Tensor&, const at::Tensor&) const {
    return false;
}

AttentionResult TeOps::attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale,
                                         const Fp8Quantizer*) const {
    const at::Tensor s = causal_scores(q, for_each_query_head(k, q.size(2)), scale);
    const at::Tensor lse = at::logsumexp(s, {3});  // [batch, heads, seq]
    const at::Tensor out = at::matmul((s - lse.unsqueeze(3)).exp(), heads_first(for_each_query_head(v, q.size(2))));
    return {out.transpose(1, 2).reshape({q.size(0), q.size(1), q.size(2) * q.size(3)}).to(q.scalar_type()),
            lse.reshape({q.size(0) * q.size(2), q.size(1)}).contiguous(), at::Tensor()};
}

AttentionGrads TeOps::attention_backward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                         const AttentionResult& forward, const at::Tensor& d_out, double scale,
                                         const Fp8Quantizer*) const {
    const std::int64_t batch = q.size(0), seq = q.size(1), heads = q.size(2), kv_heads = k.size(2), d = q.size(3);
    const at::Tensor lse = forward.lse.to(at::kFloat).reshape({batch, heads, seq, 1});
    const at::Tensor k_all = for_each_query_head(k, heads);
    const at::Tensor p = (causal_scores(q, k_all, scale) - lse).exp();
    const at::Tensor dout = heads_first(d_out.reshape({batch, seq, heads, d}));
    const at::Tensor out = heads_first(forward.out.reshape({batch, seq, heads, d}));
    const at::Tensor dv = onto_kv_heads(at::matmul(p.transpose(2, 3), dout), kv_heads);
    const at::Tensor dp = at::matmul(dout, heads_first(for_each_query_head(v, heads)).transpose(2, 3));
    const at::Tensor delta = (dout * out).sum(3, /*keepdim=*/true);
    const at::Tensor ds = p * (dp - delta);
    const at::Tensor dq = at::matmul(ds, heads_first(k_all)) * scale;
    const at::Tensor dk = onto_kv_heads(at::matmul(ds.transpose(2, 3), heads_first(q)) * scale, kv_heads);
    // One [batch, seq, heads + 2 · kv_heads, d] tensor, the projection's layout, viewed as the three gradients.
    const at::Tensor stacked = at::cat({dq.transpose(1, 2), dk.transpose(1, 2), dv.transpose(1, 2)}, 2).to(q.scalar_type());
    return {stacked.narrow(2, 0, heads), stacked.narrow(2, heads, kv_heads), stacked.narrow(2, heads + kv_heads, kv_heads),
            at::Tensor()};
}

}  // namespace tewb

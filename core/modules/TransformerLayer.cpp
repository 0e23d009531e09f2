#include "core/modules/TransformerLayer.h"

#include <cmath>
#include <tuple>
#include <vector>

#include <ATen/ops/scaled_dot_product_attention.h>
#include <ATen/ops/split_with_sizes.h>
#include <ATen/ops/unbind.h>

#include "core/common/Error.h"
#include "core/ledger/Ledger.h"
#include "core/modules/ParameterInit.h"
#include "core/modules/autograd/Functions.h"
#include "core/modules/ops/OpsChoice.h"

namespace tewb {

namespace {

std::int64_t checked_kv_heads(const std::string& name, const TransformerLayer::Options& options) {
    if (options.heads < 1 || options.hidden % options.heads != 0) {
        throw ConfigError(name + ": hidden " + std::to_string(options.hidden) + " is not divisible by heads " +
                          std::to_string(options.heads));
    }
    const std::int64_t kv = options.kv_heads > 0 ? options.kv_heads : options.heads;
    if (options.kv_heads < 0 || options.heads % kv != 0) {
        std::string reason = name;
        reason += ": key/value heads ";
        reason += std::to_string(options.kv_heads);
        reason += " do not divide heads ";
        reason += std::to_string(options.heads);
        throw ConfigError(reason);
    }
    return kv;
}

}  // namespace

TransformerLayer::TransformerLayer(const std::string& name, const Options& options, ParameterInit& init,
                                   std::shared_ptr<Fp8Context> fp8)
    : name_(name), hidden_(options.hidden), heads_(options.heads), kv_heads_(checked_kv_heads(name, options)) {
    if (!fp8) {
        fp8 = std::make_shared<Fp8Context>();
    }
    const std::int64_t qkv_out = (heads_ + 2 * kv_heads_) * (hidden_ / heads_);
    qkv_ = register_module("qkv", std::make_shared<LayerNormLinear>(
                                      name + ".qkv",
                                      LayerNormLinear::Options{options.hidden, qkv_out, options.bias, options.init_std, options.eps,
                                                               options.normalization},
                                      init, fp8));
    proj_ = register_module(
        "proj", std::make_shared<Linear>(name + ".proj",
                                         Linear::Options{options.hidden, options.hidden, options.bias, options.output_init_std}, init, fp8));
    mlp_ = register_module("mlp", std::make_shared<LayerNormMLP>(
                                      name + ".mlp",
                                      LayerNormMLP::Options{options.hidden, options.ffn_hidden, options.init_std,
                                                            options.output_init_std, options.eps, options.normalization,
                                                            options.activation, options.bias},
                                      init, fp8));
}

// qkv [batch, seq, (heads + 2 · kv) · d] → [batch, seq, heads + 2 · kv, d] with q's and k's heads turned (the first
// heads + kv of the view: one call turns both, v's are copied through).
at::Tensor TransformerLayer::rotate(const at::Tensor& qkv, const RotaryAngles& rotary,
                                    const std::shared_ptr<ScaleHandOver>& grad_scale) const {
    const at::Tensor heads = qkv.view({qkv.size(0), qkv.size(1), heads_ + 2 * kv_heads_, hidden_ / heads_});
    return apply_rotary_embedding(heads, rotary.cos, rotary.sin, heads_ + kv_heads_, ops_in_force(qkv.device()), grad_scale);
}

// q, k, v [batch, seq, heads, d] → the attention's output [batch, seq, hidden].
at::Tensor TransformerLayer::attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                       const std::shared_ptr<ScaleHandOver>& out_scale,
                                       const std::shared_ptr<ScaleHandOver>& grad_scale) const {
    // The ops' own attention where they have one for this shape (one launch each way), else LibTorch's backends.
    const TeOps& ops = ops_in_force(q.device());
    if (ops.owns_attention(q, k, v)) {
        return apply_attention(q, k, v, 1.0 / std::sqrt(static_cast<double>(q.size(3))), ops, out_scale, grad_scale);
    }
    const at::Tensor y =
        at::scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), {}, 0.0, /*is_causal=*/true);
    return y.transpose(1, 2).reshape({q.size(0), q.size(1), hidden_});
}

// qkv [batch, seq, (heads + 2 · kv) · d], or its rotated heads [batch, seq, heads + 2 · kv, d] → the attention's
// output [batch, seq, hidden].
at::Tensor TransformerLayer::attention(const at::Tensor& qkv, const std::shared_ptr<ScaleHandOver>& out_scale) const {
    const std::int64_t batch = qkv.size(0);
    const std::int64_t seq = qkv.size(1);
    const std::int64_t d = hidden_ / heads_;
    const at::Tensor heads = qkv.view({batch, seq, heads_ + 2 * kv_heads_, d});
    const std::vector<at::Tensor> parts = heads.split_with_sizes({heads_, kv_heads_, kv_heads_}, 2);
    // The ops' own attention over the packed heads (grouped queries too): its backward writes the packed gradient itself.
    const TeOps& ops = ops_in_force(qkv.device());
    if (ops.owns_attention(parts[0], parts[1], parts[2])) {
        return apply_packed_attention(heads, heads_, kv_heads_, 1.0 / std::sqrt(static_cast<double>(d)), ops, out_scale);
    }
    // LibTorch's backends: split's backward concatenates the three gradients into one tensor of the view's layout.
    const at::Tensor y =
        at::scaled_dot_product_attention(parts[0].transpose(1, 2), parts[1].transpose(1, 2), parts[2].transpose(1, 2), {}, 0.0,
                                         /*is_causal=*/true, std::nullopt, /*enable_gqa=*/kv_heads_ < heads_);
    return y.transpose(1, 2).reshape({batch, seq, hidden_});
}

at::Tensor TransformerLayer::forward(const at::Tensor& x, const RotaryAngles* rotary, std::shared_ptr<GradientHandOver>* carry) {
    if (x.dim() != 3 || x.size(2) != hidden_) {
        throw ConfigError(name_ + ": input must be [batch, seq, " + std::to_string(hidden_) + "]");
    }
    const std::int64_t d = hidden_ / heads_;
    if (rotary != nullptr && (d % 2 != 0 || rotary->cos.dim() != 2 || rotary->cos.size(0) < x.size(1) ||
                              rotary->cos.size(1) != d / 2 || rotary->sin.sizes() != rotary->cos.sizes())) {
        std::string reason = name_;
        reason += ": the rotary tables must be [at least seq, head_dim / 2] with an even head_dim (";
        reason += std::to_string(d);
        reason += ")";
        throw ConfigError(reason);
    }
    // The ledger's scopes (core/ledger): qkv holds the first normalization, mlp the second (both fused).
    // The skip connections are added by the GEMMs that end each half (proj, fc2), as Transformer Engine folds its
    // bias-dropout-add: no separate add, and the residual stream keeps its dtype (float32 under autocast). Their
    // gradients are summed into the normalization backwards (qkv's for the first, the MLP's own for the second): the
    // autograd engine adds nothing.
    at::Tensor qkv, skip, attention_out, h;
    const std::shared_ptr<GradientHandOver> into_block = carry != nullptr ? *carry : nullptr;
    // The amax hand-offs around the attention (ScaleHandOver): its output's FP8 scale for proj's input cast, its q, k
    // and v gradients' for the qkv projection's (where the ops run the attention and the recipe takes scales from amaxes).
    const auto into_proj = std::make_shared<ScaleHandOver>();
    if (rotary == nullptr && kv_heads_ == heads_) {
        // The projection hands out q, k and v itself, so its backward stacks their gradients and casts them in one pass.
        std::vector<at::Tensor> heads;
        const auto from_attention = std::make_shared<ScaleHandOver>();
        {
            const LedgerScope scope("qkv");
            heads = qkv_->forward_heads_keeping_input(x, heads_, into_block, from_attention);
        }
        skip = heads[3];
        proj_->ask_input_scale(heads[0], *into_proj);
        const LedgerScope scope("attention");
        attention_out = attention(heads[0], heads[1], heads[2], into_proj, from_attention);
    } else {
        // With rotary embeddings the qkv gradient comes out of the inverse rotation, which hands its scale over.
        const auto from_rotary = rotary != nullptr ? std::make_shared<ScaleHandOver>() : nullptr;
        {
            const LedgerScope scope("qkv");
            std::tie(qkv, skip) = qkv_->forward_keeping_input(x, into_block, from_rotary);
        }
        if (rotary != nullptr) {
            const LedgerScope scope("rotary");
            qkv = rotate(qkv, *rotary, from_rotary);
        }
        proj_->ask_input_scale(qkv, *into_proj);
        const LedgerScope scope("attention");
        attention_out = attention(qkv, into_proj);
    }
    // proj's output gradient comes from the MLP's LayerNorm backward, fc2's from the next LayerNorm's: each hands it on
    // cast and summed.
    const auto into_mlp = std::make_shared<GradientHandOver>();
    {
        const LedgerScope scope("proj");
        h = proj_->forward(attention_out, skip, into_mlp, into_proj);
    }
    const LedgerScope scope("mlp");
    const auto out_of_block = std::make_shared<GradientHandOver>();
    if (carry != nullptr) *carry = out_of_block;
    return mlp_->forward(h, h, into_mlp, out_of_block);
}

}  // namespace tewb

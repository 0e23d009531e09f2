#include "core/modules/TransformerLayer.h"

#include <tuple>
#include <vector>

#include <ATen/ops/scaled_dot_product_attention.h>
#include <ATen/ops/unbind.h>

#include "core/common/Error.h"
#include "core/ledger/Ledger.h"
#include "core/modules/ParameterInit.h"

namespace tewb {

TransformerLayer::TransformerLayer(const std::string& name, const Options& options, ParameterInit& init,
                                   std::shared_ptr<Fp8Context> fp8)
    : name_(name), hidden_(options.hidden), heads_(options.heads) {
    if (options.heads < 1 || options.hidden % options.heads != 0) {
        throw ConfigError(name + ": hidden " + std::to_string(options.hidden) + " is not divisible by heads " +
                          std::to_string(options.heads));
    }
    if (!fp8) {
        fp8 = std::make_shared<Fp8Context>();
    }
    qkv_ = register_module("qkv", std::make_shared<LayerNormLinear>(
                                      name + ".qkv",
                                      LayerNormLinear::Options{options.hidden, 3 * options.hidden, true, options.init_std, options.eps},
                                      init, fp8));
    proj_ = register_module(
        "proj", std::make_shared<Linear>(name + ".proj", Linear::Options{options.hidden, options.hidden, true, options.output_init_std},
                                         init, fp8));
    mlp_ = register_module("mlp", std::make_shared<LayerNormMLP>(
                                      name + ".mlp",
                                      LayerNormMLP::Options{options.hidden, options.ffn_hidden, options.init_std,
                                                            options.output_init_std, options.eps},
                                      init, fp8));
}

at::Tensor TransformerLayer::forward(const at::Tensor& x) {
    if (x.dim() != 3 || x.size(2) != hidden_) {
        throw ConfigError(name_ + ": input must be [batch, seq, " + std::to_string(hidden_) + "]");
    }
    const std::int64_t batch = x.size(0);
    const std::int64_t seq = x.size(1);
    // The ledger's scopes (core/ledger): qkv holds the first LayerNorm, mlp the second (both fused).
    // The skip connections are added by the GEMMs that end each half (proj, fc2), as Transformer Engine folds its
    // bias-dropout-add: no separate add, and the residual stream keeps its dtype (float32 under autocast). Their
    // gradients are summed into the LayerNorm backwards (qkv's for the first, the MLP's own for the second): the
    // autograd engine adds nothing.
    at::Tensor qkv, skip, attention, h;
    {
        const LedgerScope scope("qkv");
        std::tie(qkv, skip) = qkv_->forward_keeping_input(x);
    }
    {
        const LedgerScope scope("attention");
        // q, k and v as views of the projection ([batch, seq, 3, heads, head dim] split along the 3): unbind's
        // backward stacks their gradients into one tensor of the projection's layout (one write), where
        // indexing would give each a zero-filled copy and sum the three.
        const std::vector<at::Tensor> heads = qkv.view({batch, seq, 3, heads_, hidden_ / heads_}).unbind(2);
        attention = at::scaled_dot_product_attention(heads[0].transpose(1, 2), heads[1].transpose(1, 2), heads[2].transpose(1, 2),
                                                     {}, 0.0, /*is_causal=*/true);
        attention = attention.transpose(1, 2).reshape({batch, seq, hidden_});
    }
    {
        const LedgerScope scope("proj");
        h = proj_->forward(attention, skip);
    }
    const LedgerScope scope("mlp");
    return mlp_->forward(h, h);
}

}  // namespace tewb

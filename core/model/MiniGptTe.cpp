#include "core/model/MiniGptTe.h"

#include "core/ledger/Ledger.h"
#include "core/modules/ParameterInit.h"
#include "core/modules/ops/OpsChoice.h"

namespace tewb {

MiniGptTe::MiniGptTe(const ModelShape& shape, std::uint64_t seed) : TiedHeadTeLm(shape) {
    ParameterInit init(seed);
    const std::int64_t h = shape.hidden;
    wte_ = register_parameter("wte", init.normal({shape.vocab, h}, kGptInitStd));
    wpe_ = register_parameter("wpe", init.normal({shape.seq, h}, kGptInitStd));
    const TransformerLayer::Options options{h, shape.heads, 4 * h, kGptInitStd, gpt_residual_init_std(shape.layers),
                                            kLayerNormEps};
    for (int i = 0; i < shape.layers; ++i) {
        const std::string name = "blocks_" + std::to_string(i);
        blocks_.push_back(register_module(name, std::make_shared<TransformerLayer>(name, options, init, fp8_)));
    }
    ln_f_ = register_module("ln_f", std::make_shared<LayerNorm>("ln_f", h, init));
}

torch::Tensor MiniGptTe::hidden_states(const torch::Tensor& tokens, const std::shared_ptr<TiedTableGradient>& tied) {
    at::Tensor x;
    {
        const LedgerScope scope("embedding");
        const TeOps& ops = ops_in_force(tokens.device());
        x = apply_embedding(wte_, position_embeddings(wpe_, tokens.size(1)), tokens, ops, tied)
                .view({tokens.size(0), tokens.size(1), shape_.hidden});
    }
    // Each block's fc2 gets its output gradient cast and summed by the next LayerNorm (GradientHandOver).
    std::shared_ptr<GradientHandOver> carry;
    for (std::size_t i = 0; i < blocks_.size(); ++i) {
        const LedgerScope layer("layer", static_cast<int>(i));
        x = blocks_[i]->forward(x, nullptr, &carry);
    }
    const LedgerScope scope("head");
    return ln_f_->forward(x, carry).reshape({-1, shape_.hidden});
}

}  // namespace tewb

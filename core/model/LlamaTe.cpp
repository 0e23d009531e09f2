#include "core/model/LlamaTe.h"

#include "core/ledger/Ledger.h"
#include "core/model/Rotary.h"
#include "core/modules/ParameterInit.h"
#include "core/modules/ops/OpsChoice.h"

// Module::to() moves parameters and buffers with set_data(), so the tensor members below stay the live ones.

namespace tewb {

LlamaTe::LlamaTe(const ModelShape& shape, std::uint64_t seed) : TiedHeadTeLm(shape) {
    ParameterInit init(seed);
    const std::int64_t h = shape.hidden;
    wte_ = register_parameter("wte", init.normal({shape.vocab, h}, kGptInitStd));
    TransformerLayer::Options options;
    options.hidden = h;
    options.heads = shape.heads;
    options.ffn_hidden = ffn_hidden(shape);
    options.init_std = kGptInitStd;
    options.output_init_std = gpt_residual_init_std(shape.layers);
    options.eps = kRmsNormEps;
    options.normalization = Normalization::RmsNorm;
    options.activation = Activation::Swiglu;
    options.bias = false;
    options.kv_heads = effective_kv_heads(shape);
    for (int i = 0; i < shape.layers; ++i) {
        std::string name = "blocks_";
        name += std::to_string(i);
        blocks_.push_back(register_module(name, std::make_shared<TransformerLayer>(name, options, init, fp8_)));
    }
    norm_f_ = register_module("norm_f", std::make_shared<RmsNorm>("norm_f", h, init, kRmsNormEps));
    const RotaryTables tables = rotary_tables(shape.seq, h / shape.heads, shape.rope_base);
    rope_cos_ = register_buffer("rope_cos", tables.cos);
    rope_sin_ = register_buffer("rope_sin", tables.sin);
}

torch::Tensor LlamaTe::hidden_states(const torch::Tensor& tokens, const std::shared_ptr<TiedTableGradient>& tied) {
    at::Tensor x;
    {
        const LedgerScope scope("embedding");
        const TeOps& ops = ops_in_force(tokens.device());
        x = apply_embedding(wte_, at::Tensor(), tokens, ops, tied).view({tokens.size(0), tokens.size(1), shape_.hidden});
    }
    const RotaryAngles rotary{rope_cos_, rope_sin_};
    // Each block's down projection (fc2) gets its output gradient cast by the next RMSNorm where the ops have such a pass
    // (GradientHandOver; under current scaling the RMSNorm backward writes its scale).
    std::shared_ptr<GradientHandOver> carry;
    for (std::size_t i = 0; i < blocks_.size(); ++i) {
        const LedgerScope layer("layer", static_cast<int>(i));
        x = blocks_[i]->forward(x, &rotary, &carry);
    }
    const LedgerScope scope("head");
    return norm_f_->forward(x, carry).reshape({-1, shape_.hidden});
}

}  // namespace tewb

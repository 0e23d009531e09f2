#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/fp8/Fp8State.h"
#include "core/model/CausalLm.h"
#include "core/modules/autograd/Functions.h"
#include "core/modules/LayerNorm.h"
#include "core/modules/TransformerLayer.h"
#include "core/model/ModelShape.h"

namespace tewb {

// MiniGPT on the TE-style modules (backend "te"): token + position embeddings, one TransformerLayer per
// block, a final te LayerNorm, the LM head tied to the token embedding (kept in high precision, as
// Transformer Engine users do). For the same seed it creates the same parameter values, shapes and
// order as the torch backend (MiniGpt); the names follow the modules: wte, wpe,
// blocks_<i>.qkv.{layer_norm_weight,layer_norm_bias,weight,bias}, blocks_<i>.proj.{weight,bias},
// blocks_<i>.mlp.{layer_norm_weight,...,fc2_bias}, ln_f.{weight,bias}. All blocks share one FP8 state.
class MiniGptTe : public CausalLm {
public:
    MiniGptTe(const ModelShape& shape, std::uint64_t seed);

    torch::Tensor forward(const torch::Tensor& tokens) override;
    // The head and the loss fused (apply_tied_head_loss): the logits are never kept, their memory takes the
    // gradient, and the tied table's two gradients are summed in place.
    torch::Tensor loss(const torch::Tensor& tokens, const torch::Tensor& targets) override;
    std::shared_ptr<Fp8Context> fp8_context() const override { return fp8_; }

private:
    // Embeddings, blocks and the final LayerNorm: [batch * seq, hidden].
    torch::Tensor hidden_states(const torch::Tensor& tokens, const std::shared_ptr<TiedTableGradient>& tied);

    ModelShape shape_;
    std::shared_ptr<Fp8Context> fp8_ = std::make_shared<Fp8Context>();
    torch::Tensor wte_, wpe_;
    std::vector<std::shared_ptr<TransformerLayer>> blocks_;
    std::shared_ptr<LayerNorm> ln_f_;
};

}  // namespace tewb

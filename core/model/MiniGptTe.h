#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/model/ModelShape.h"
#include "core/model/TiedHeadTeLm.h"
#include "core/modules/LayerNorm.h"
#include "core/modules/TransformerLayer.h"

namespace tewb {

// MiniGPT on the TE-style modules (backend "te"): token + position embeddings, one TransformerLayer per
// block, a final te LayerNorm, the LM head tied to the token embedding (TiedHeadTeLm). For the same seed it
// creates the same parameter values, shapes and order as the torch backend (MiniGpt); the names follow the
// modules: wte, wpe,
// blocks_<i>.qkv.{layer_norm_weight,layer_norm_bias,weight,bias}, blocks_<i>.proj.{weight,bias},
// blocks_<i>.mlp.{layer_norm_weight,...,fc2_bias}, ln_f.{weight,bias}. All blocks share one FP8 state.
class MiniGptTe : public TiedHeadTeLm {
public:
    MiniGptTe(const ModelShape& shape, std::uint64_t seed);

private:
    // Token and position embeddings, blocks and the final LayerNorm.
    torch::Tensor hidden_states(const torch::Tensor& tokens, const std::shared_ptr<TiedTableGradient>& tied) override;

    torch::Tensor wpe_;
    std::vector<std::shared_ptr<TransformerLayer>> blocks_;
    std::shared_ptr<LayerNorm> ln_f_;
};

}  // namespace tewb

#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/model/ModelShape.h"
#include "core/model/TiedHeadTeLm.h"
#include "core/modules/RmsNorm.h"
#include "core/modules/TransformerLayer.h"

namespace tewb {

// The Llama-style decoder on the TE-style modules (backend "te", arch "llama"): token embeddings without a
// position table; one TransformerLayer per block with normalization RMSNorm, activation SwiGLU, no biases,
// grouped-query attention (effective_kv_heads) and rotary embeddings on the queries and keys; a final te RMSNorm;
// the LM head tied to the token embedding, its loss fused (TiedHeadTeLm). For the same seed it creates the same
// parameter values, shapes and order as the torch backend (Llama); the names follow the modules: wte,
// blocks_<i>.qkv.{layer_norm_weight,weight}, blocks_<i>.proj.weight, blocks_<i>.mlp.{layer_norm_weight,fc1_weight,
// fc2_weight}, norm_f.weight. The rotary tables are buffers (rope_cos, rope_sin), moved with the model. All blocks
// share one FP8 state.
class LlamaTe : public TiedHeadTeLm {
public:
    LlamaTe(const ModelShape& shape, std::uint64_t seed);

private:
    // Token embedding, blocks (rotary tables passed down) and the final RMSNorm.
    torch::Tensor hidden_states(const torch::Tensor& tokens, const std::shared_ptr<TiedTableGradient>& tied) override;

    torch::Tensor rope_cos_, rope_sin_;  // float32 [seq, head_dim / 2] (core/model/Rotary.h)
    std::vector<std::shared_ptr<TransformerLayer>> blocks_;
    std::shared_ptr<RmsNorm> norm_f_;
};

}  // namespace tewb

#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/model/CausalLm.h"
#include "core/model/ModelShape.h"

namespace tewb {

// The seed's MiniGPT in plain LibTorch ops (backend "torch"): token + position embeddings; pre-LayerNorm
// blocks (QKV linear, causal scaled_dot_product_attention, output projection, residual; LayerNorm, 4x MLP
// with tanh GELU, residual); final LayerNorm; LM head tied to the token embedding.
//
// Parameters are created, in this order, by ParameterInit: wte, wpe, then per block i (names
// blocks_<i>_<part>_<weight|bias>) ln1.{weight,bias},
// qkv.{weight,bias}, proj.{weight,bias}, ln2.{weight,bias}, fc1.{weight,bias}, fc2.{weight,bias};
// then ln_f.{weight,bias}. Weights ~ N(0, 0.02), the two residual-output projections ~ N(0, 0.02/sqrt(2L))
// (GPT-2), biases 0, LayerNorm weight 1.
class MiniGpt : public CausalLm {
public:
    MiniGpt(const ModelShape& shape, std::uint64_t seed);

    torch::Tensor forward(const torch::Tensor& tokens) override;

private:
    struct Block {
        torch::Tensor ln1_weight, ln1_bias, qkv_weight, qkv_bias, proj_weight, proj_bias;
        torch::Tensor ln2_weight, ln2_bias, fc1_weight, fc1_bias, fc2_weight, fc2_bias;
    };

    ModelShape shape_;
    torch::Tensor wte_, wpe_, ln_f_weight_, ln_f_bias_;
    std::vector<Block> blocks_;
};

std::shared_ptr<CausalLm> make_model(Backend backend, const ModelShape& shape, std::uint64_t seed);

}  // namespace tewb

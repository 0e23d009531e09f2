#pragma once

#include <cstdint>
#include <vector>

#include "core/model/CausalLm.h"
#include "core/model/ModelShape.h"

namespace tewb {

// A Llama-style decoder in plain LibTorch ops (backend "torch", arch "llama"): token embeddings only (no position
// table); pre-RMSNorm blocks without biases (QKV linear with grouped-query key/value heads, rotary position
// embeddings on the queries and keys, causal scaled_dot_product_attention, output projection, residual; RMSNorm,
// SwiGLU MLP, residual); final RMSNorm; LM head tied to the token embedding (docs/architecture.md, "Llama").
//
// Parameters are created, in this order, by ParameterInit: wte, then per block i (names blocks_<i>_<part>_weight)
// attn_norm [h] ones, qkv [(heads + 2·kv)·d, h] (rows: q's heads, k's, v's), proj [h, h], mlp_norm [h] ones,
// fc1 [2·ffn, h] (rows: gate, then up), fc2 [h, ffn]; then norm_f [h] ones. Weights ~ N(0, 0.02), proj and fc2
// ~ N(0, 0.02/sqrt(2L)). LlamaTe (backend te) creates the same values in the same order.
class Llama : public CausalLm {
public:
    Llama(const ModelShape& shape, std::uint64_t seed);

    torch::Tensor forward(const torch::Tensor& tokens) override;

private:
    struct Block {
        torch::Tensor attn_norm_weight, qkv_weight, proj_weight, mlp_norm_weight, fc1_weight, fc2_weight;
    };

    torch::Tensor attention(const Block& b, const torch::Tensor& x) const;
    torch::Tensor mlp(const Block& b, const torch::Tensor& x) const;

    ModelShape shape_;
    int kv_heads_;
    std::int64_t ffn_;
    torch::Tensor wte_, norm_f_weight_;
    torch::Tensor rope_cos_, rope_sin_;  // buffers, float32 [seq, head_dim / 2] (core/model/Rotary.h)
    std::vector<Block> blocks_;
};

// Rotary position embeddings in LibTorch ops (autograd follows them): the first `rotated_heads` heads of x
// [batch, seq, heads, head_dim] turned by the tables' angles in the rotate-half layout (pairs (i, i + d/2)), in
// float32, the result in x's dtype. The other heads pass through unchanged.
torch::Tensor apply_rotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                           std::int64_t rotated_heads);

}  // namespace tewb

#pragma once

#include <memory>
#include <string>

#include <torch/nn/module.h>

#include "core/fp8/Fp8State.h"
#include "core/modules/LayerNormLinear.h"
#include "core/modules/LayerNormMLP.h"
#include "core/modules/Linear.h"
#include "core/modules/ModuleChoices.h"

namespace tewb {

// The rotary embeddings' angles a block turns its queries and keys by (te.TransformerLayer's rotary_pos_emb): cos
// and sin float32 [seq, head_dim / 2] (at least the input's seq rows) on the input's device.
struct RotaryAngles {
    at::Tensor cos;
    at::Tensor sin;
};

// A pre-norm transformer block (te.TransformerLayer): LayerNormLinear to Q, K, V; causal
// scaled_dot_product_attention (LibTorch's flash / cuDNN / math backends); Linear projection; residual;
// LayerNormMLP; residual. Parameters are created in the order of the plain block: ln1, qkv, proj, ln2, fc1,
// fc2 (each weight before its bias), so the same seed gives the same block. The defaults are the gpt block; as
// Transformer Engine's it also takes normalization="RMSNorm", activation="swiglu", bias=False and grouped-query
// attention (num_gqa_groups: `kv_heads` key/value heads, the QKV projection's output (heads + 2 · kv_heads) ·
// head_dim as q's heads, then k's, then v's): the llama block.
class TransformerLayer : public torch::nn::Module {
public:
    struct Options {
        std::int64_t hidden = 768;
        std::int64_t heads = 12;
        std::int64_t ffn_hidden = 3072;  // SwiGLU: the width of silu(gate) · up (fc1 has twice as many outputs)
        double init_std = 0.02;
        double output_init_std = 0.02;  // the attention projection and fc2
        double eps = kLayerNormEps;
        Normalization normalization = Normalization::LayerNorm;
        Activation activation = Activation::Gelu;
        bool bias = true;
        std::int64_t kv_heads = 0;  // 0: as many as heads (multi-head attention)
    };

    // `name` prefixes the FP8 slot names: "<name>.qkv", "<name>.proj", "<name>.mlp.fc1", "<name>.mlp.fc2".
    TransformerLayer(const std::string& name, const Options& options, ParameterInit& init,
                     std::shared_ptr<Fp8Context> fp8 = nullptr);

    // x: [batch, seq, hidden] → same shape. With `rotary`, the queries and keys are turned by its angles first
    // (apply_rotary_embedding, one call over q's and k's heads).
    // `carry` (may be null): in, the hand-over of the Linear that made x (the block before's fc2), delivered by this
    // block's first LayerNorm; out, a fresh one for this block's fc2, for the LayerNorm that takes its output
    // (GradientHandOver).
    at::Tensor forward(const at::Tensor& x, const RotaryAngles* rotary = nullptr, std::shared_ptr<GradientHandOver>* carry = nullptr);

    LayerNormLinear& qkv() { return *qkv_; }
    Linear& proj() { return *proj_; }
    LayerNormMLP& mlp() { return *mlp_; }

private:
    // `grad_scale`: the qkv projection's ask for its output gradient's scale, which the inverse rotation writes.
    at::Tensor rotate(const at::Tensor& qkv, const RotaryAngles& rotary, const std::shared_ptr<ScaleHandOver>& grad_scale) const;
    // `out_scale`, `grad_scale`: the amax hand-offs to proj's input cast and from the qkv projection (ScaleHandOver); used
    // where the ops run the attention themselves.
    at::Tensor attention(const at::Tensor& qkv, const std::shared_ptr<ScaleHandOver>& out_scale) const;
    at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const std::shared_ptr<ScaleHandOver>& out_scale,
                         const std::shared_ptr<ScaleHandOver>& grad_scale) const;

    std::string name_;
    std::int64_t hidden_;
    std::int64_t heads_;
    std::int64_t kv_heads_;
    std::shared_ptr<LayerNormLinear> qkv_;
    std::shared_ptr<Linear> proj_;
    std::shared_ptr<LayerNormMLP> mlp_;
};

}  // namespace tewb

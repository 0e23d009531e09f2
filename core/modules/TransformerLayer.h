#pragma once

#include <memory>
#include <string>

#include <torch/nn/module.h>

#include "core/fp8/Fp8State.h"
#include "core/modules/LayerNormLinear.h"
#include "core/modules/LayerNormMLP.h"
#include "core/modules/Linear.h"

namespace tewb {

// A pre-LayerNorm GPT block (te.TransformerLayer): LayerNormLinear to Q, K, V; causal
// scaled_dot_product_attention (LibTorch's flash / cuDNN / math backends); Linear projection; residual;
// LayerNormMLP; residual. Parameters are created in the order of the plain MiniGPT block: ln1, qkv,
// proj, ln2, fc1, fc2 (each weight before its bias), so the same seed gives the same block.
class TransformerLayer : public torch::nn::Module {
public:
    struct Options {
        std::int64_t hidden = 768;
        std::int64_t heads = 12;
        std::int64_t ffn_hidden = 3072;
        double init_std = 0.02;
        double output_init_std = 0.02;  // the attention projection and fc2
        double eps = kLayerNormEps;
    };

    // `name` prefixes the FP8 slot names: "<name>.qkv", "<name>.proj", "<name>.mlp.fc1", "<name>.mlp.fc2".
    TransformerLayer(const std::string& name, const Options& options, ParameterInit& init,
                     std::shared_ptr<Fp8Context> fp8 = nullptr);

    // x: [batch, seq, hidden] → same shape.
    at::Tensor forward(const at::Tensor& x);

    LayerNormLinear& qkv() { return *qkv_; }
    Linear& proj() { return *proj_; }
    LayerNormMLP& mlp() { return *mlp_; }

private:
    std::string name_;
    std::int64_t hidden_;
    std::int64_t heads_;
    std::shared_ptr<LayerNormLinear> qkv_;
    std::shared_ptr<Linear> proj_;
    std::shared_ptr<LayerNormMLP> mlp_;
};

}  // namespace tewb

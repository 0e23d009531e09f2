#pragma once

#include <memory>
#include <string>

#include <torch/nn/module.h>

#include "core/fp8/Fp8State.h"
#include "core/modules/LayerNorm.h"
#include "core/modules/ModuleChoices.h"
#include "core/modules/autograd/GemmStep.h"

namespace tewb {

class GradientHandOver;
class ParameterInit;

// LayerNorm → fc1 → GELU (tanh) → fc2 in one autograd function (te.LayerNormMLP): two GEMMs, so six
// forward and four backward FP8 slots. As Transformer Engine's, it takes normalization="RMSNorm",
// activation="swiglu" (fc1 then has 2 · ffn_hidden outputs, [gate | up], and fc2 reads silu(gate) · up) and
// bias=False. Parameters, in creation order: layer_norm_weight, layer_norm_bias (LayerNorm only), fc1_weight,
// fc1_bias, fc2_weight, fc2_bias (the biases with `bias`).
class LayerNormMLP : public torch::nn::Module {
public:
    struct Options {
        std::int64_t hidden = 0;
        std::int64_t ffn_hidden = 0;
        double init_std = 0.02;
        double output_init_std = 0.02;  // fc2 (GPT-2 scales residual outputs down)
        double eps = kLayerNormEps;
        Normalization normalization = Normalization::LayerNorm;
        Activation activation = Activation::Gelu;
        bool bias = true;
    };

    LayerNormMLP(std::string name, const Options& options, ParameterInit& init, std::shared_ptr<Fp8Context> fp8 = nullptr);

    // With a `residual` (x's shape): residual + MLP(x), added in fc2's GEMM where the ops can (Linear::forward).
    // `input_grad`: its LayerNorm's dx handed to the Linear that made x; `output_grad`: fc2's output gradient handed
    // over by the LayerNorm the output feeds (GradientHandOver).
    at::Tensor forward(const at::Tensor& x, const at::Tensor& residual = {}, const std::shared_ptr<GradientHandOver>& input_grad = nullptr,
                       const std::shared_ptr<GradientHandOver>& output_grad = nullptr);

    const at::Tensor& layer_norm_weight() const { return ln_weight_; }
    const at::Tensor& layer_norm_bias() const { return ln_bias_; }
    const at::Tensor& fc1_weight() const { return fc1_weight_; }
    const at::Tensor& fc1_bias() const { return fc1_bias_; }
    const at::Tensor& fc2_weight() const { return fc2_weight_; }
    const at::Tensor& fc2_bias() const { return fc2_bias_; }

private:
    std::string name_;
    double eps_;
    Normalization normalization_;
    Activation activation_;
    at::Tensor ln_weight_, ln_bias_, fc1_weight_, fc1_bias_, fc2_weight_, fc2_bias_;
    std::shared_ptr<Fp8Context> fp8_;
    Fp8Context::GemmSlots fc1_slots_, fc2_slots_;
    std::shared_ptr<Fp8WeightCache> fc1_cache_ = std::make_shared<Fp8WeightCache>();
    std::shared_ptr<Fp8WeightCache> fc2_cache_ = std::make_shared<Fp8WeightCache>();
};

}  // namespace tewb

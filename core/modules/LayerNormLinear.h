#pragma once

#include <vector>

#include <memory>
#include <string>

#include <torch/nn/module.h>

#include "core/fp8/Fp8State.h"
#include "core/modules/LayerNorm.h"
#include "core/modules/Linear.h"
#include "core/modules/ModuleChoices.h"

namespace tewb {

// LayerNorm (or RMSNorm: te.LayerNormLinear's normalization="RMSNorm") followed by a Linear in one autograd
// function (te.LayerNormLinear), so a fused implementation can write the normalized output straight into the GEMM's
// FP8 input. Parameters, in creation order: layer_norm_weight, layer_norm_bias (LayerNorm only), weight, bias (with
// `bias`).
class LayerNormLinear : public torch::nn::Module {
public:
    struct Options {
        std::int64_t in_features = 0;
        std::int64_t out_features = 0;
        bool bias = true;
        double init_std = 0.02;
        double eps = kLayerNormEps;
        Normalization normalization = Normalization::LayerNorm;
    };

    LayerNormLinear(std::string name, const Options& options, ParameterInit& init, std::shared_ptr<Fp8Context> fp8 = nullptr);

    at::Tensor forward(const at::Tensor& x);
    // Also returns the LayerNorm output (differentiable), as te.LayerNormLinear(return_layernorm_output=True).
    std::pair<at::Tensor, at::Tensor> forward_with_layernorm_output(const at::Tensor& x);
    // Also returns x (as a view) for a skip connection taken around the module: the gradient that reaches
    // x through it comes back to this module, whose LayerNorm backward adds it to dx (no separate sum).
    std::pair<at::Tensor, at::Tensor> forward_keeping_input(const at::Tensor& x);

    const at::Tensor& layer_norm_weight() const { return ln_weight_; }
    const at::Tensor& layer_norm_bias() const { return ln_bias_; }
    const at::Tensor& weight() const { return weight_; }
    const at::Tensor& bias() const { return bias_; }

private:
    std::vector<at::Tensor> run(const at::Tensor& x, bool layernorm_output, bool input_output = false);

    std::string name_;
    double eps_;
    Normalization normalization_;
    at::Tensor ln_weight_, ln_bias_, weight_, bias_;
    std::shared_ptr<Fp8Context> fp8_;
    Fp8Context::GemmSlots slots_;
    std::shared_ptr<Fp8WeightCache> weight_cache_ = std::make_shared<Fp8WeightCache>();
};

}  // namespace tewb

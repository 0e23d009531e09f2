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
    // `input_grad` (here and below): dx handed to the Linear that made x, where it asked (GradientHandOver).
    // `grad_scale` (here and below): in FP8, asked for the output gradient's scale, which the op the output feeds may write
    // in its backward (ScaleHandOver: the rotary's inverse, the attention's backward).
    std::pair<at::Tensor, at::Tensor> forward_keeping_input(const at::Tensor& x,
                                                            const std::shared_ptr<GradientHandOver>& input_grad = nullptr,
                                                            const std::shared_ptr<ScaleHandOver>& grad_scale = nullptr);
    // forward_keeping_input for an attention's projection of `heads` heads (out_features = 3 · heads · head_dim) over x
    // [batch, seq, in]: {q, k, v, x}, q, k and v [batch, seq, heads, head_dim] views of the output (HeadSplit: the
    // backward stacks and casts their gradients in one pass). Views made in a custom autograd function: an in-place op
    // on them (or on views of them) is refused by autograd.
    std::vector<at::Tensor> forward_heads_keeping_input(const at::Tensor& x, std::int64_t heads,
                                                        const std::shared_ptr<GradientHandOver>& input_grad = nullptr,
                                                        const std::shared_ptr<ScaleHandOver>& grad_scale = nullptr);

    const at::Tensor& layer_norm_weight() const { return ln_weight_; }
    const at::Tensor& layer_norm_bias() const { return ln_bias_; }
    const at::Tensor& weight() const { return weight_; }
    const at::Tensor& bias() const { return bias_; }

private:
    std::vector<at::Tensor> run(const at::Tensor& x, bool layernorm_output, bool input_output = false, std::int64_t heads = 0,
                                const std::shared_ptr<GradientHandOver>& input_grad = nullptr,
                                const std::shared_ptr<ScaleHandOver>& grad_scale = nullptr);

    std::string name_;
    double eps_;
    Normalization normalization_;
    at::Tensor ln_weight_, ln_bias_, weight_, bias_;
    std::shared_ptr<Fp8Context> fp8_;
    Fp8Context::GemmSlots slots_;
    std::shared_ptr<Fp8WeightCache> weight_cache_ = std::make_shared<Fp8WeightCache>();
};

}  // namespace tewb

#pragma once

#include <memory>
#include <string>

#include <torch/nn/module.h>

namespace tewb {

class GradientHandOver;
class ParameterInit;

constexpr double kLayerNormEps = 1e-5;

// LayerNorm over the last dimension with float32 statistics (te.LayerNorm); the output is in the
// compute dtype (autocast's when on, else the input's). Parameters weight = 1, bias = 0.
class LayerNorm : public torch::nn::Module {
public:
    LayerNorm(std::string name, std::int64_t hidden, ParameterInit& init, double eps = kLayerNormEps);

    // `input_grad`: dx handed to the Linear that made x, with its cast and sums, where it asked (GradientHandOver).
    at::Tensor forward(const at::Tensor& x, const std::shared_ptr<GradientHandOver>& input_grad = nullptr);

    const at::Tensor& weight() const { return weight_; }
    const at::Tensor& bias() const { return bias_; }

private:
    std::string name_;
    double eps_;
    at::Tensor weight_, bias_;
};

}  // namespace tewb

#pragma once

#include <memory>
#include <string>

#include <torch/nn/module.h>

namespace tewb {

class GradientHandOver;
class ParameterInit;

// RMSNorm over the last dimension with float32 statistics (te.RMSNorm): y = x · rstd · weight, rstd =
// 1 / sqrt(mean(x²) + eps); no mean subtracted, no bias. The output is in the compute dtype (autocast's when on,
// else the input's). Parameter weight = 1.
class RmsNorm : public torch::nn::Module {
public:
    RmsNorm(std::string name, std::int64_t hidden, ParameterInit& init, double eps);

    // `input_grad`: dx handed to the Linear that made x, cast, where it asked and the ops have such a pass
    // (GradientHandOver; TeOps::rms_norm_backward_quantize).
    at::Tensor forward(const at::Tensor& x, const std::shared_ptr<GradientHandOver>& input_grad = nullptr);

    const at::Tensor& weight() const { return weight_; }

private:
    std::string name_;
    double eps_;
    at::Tensor weight_;
};

}  // namespace tewb

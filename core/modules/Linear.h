#pragma once

#include <memory>
#include <string>

#include <torch/nn/module.h>

#include "core/fp8/Fp8State.h"
#include "core/modules/autograd/GemmStep.h"

namespace tewb {

class GradientHandOver;
class ParameterInit;
class ScaleHandOver;

// y = x · Wᵀ + b over the last dimension (Transformer Engine's te.Linear). Inside an enabled Fp8Scope
// the GEMM runs in FP8: input and weight cast to E4M3, the gradient to the recipe's backward format,
// float32 accumulation. Parameters: weight [out, in] ~ N(0, init_std), bias [out] = 0, created through
// `init` in that order. Modules that share `fp8` (a model) update their FP8 slots together.
class Linear : public torch::nn::Module {
public:
    struct Options {
        std::int64_t in_features = 0;
        std::int64_t out_features = 0;
        bool bias = true;
        double init_std = 0.02;
    };

    Linear(std::string name, const Options& options, ParameterInit& init, std::shared_ptr<Fp8Context> fp8 = nullptr);

    // With a `residual` (the output's shape): residual + x · Wᵀ + b in the residual's dtype, the add done in the
    // GEMM where the ops can (a transformer block's skip connection, as Transformer Engine folds it).
    // `output_grad`: the output's gradient may come already cast by the LayerNorm it feeds (GradientHandOver).
    // `input_scale`: x's FP8 scale may come from the kernel that made x, asked for with ask_input_scale (ScaleHandOver).
    at::Tensor forward(const at::Tensor& x, const at::Tensor& residual = {},
                       const std::shared_ptr<GradientHandOver>& output_grad = nullptr,
                       const std::shared_ptr<ScaleHandOver>& input_scale = nullptr);
    // Asks `hand_over` for the FP8 scale of an input like `like` (its device and dtype; in FP8 only), before the kernel
    // that makes the input runs.
    void ask_input_scale(const at::Tensor& like, ScaleHandOver& hand_over);

    const at::Tensor& weight() const { return weight_; }
    const at::Tensor& bias() const { return bias_; }
    const std::shared_ptr<Fp8Context>& fp8_context() const { return fp8_; }

private:
    std::string name_;
    at::Tensor weight_, bias_;
    std::shared_ptr<Fp8Context> fp8_;
    Fp8Context::GemmSlots slots_;
    std::shared_ptr<Fp8WeightCache> weight_cache_ = std::make_shared<Fp8WeightCache>();
};

// Checks that x's last dimension is `features`; throws ConfigError naming the module otherwise.
void check_features(const std::string& module, const at::Tensor& x, std::int64_t features);

}  // namespace tewb

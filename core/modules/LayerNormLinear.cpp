#include "core/modules/LayerNormLinear.h"

#include <stdexcept>

#include "core/common/Error.h"
#include "core/modules/ParameterInit.h"
#include "core/modules/autograd/Functions.h"

namespace tewb {

LayerNormLinear::LayerNormLinear(std::string name, const Options& options, ParameterInit& init, std::shared_ptr<Fp8Context> fp8)
    : name_(std::move(name)),
      eps_(options.eps),
      normalization_(options.normalization),
      fp8_(fp8 ? std::move(fp8) : std::make_shared<Fp8Context>()) {
    ln_weight_ = register_parameter("layer_norm_weight", init.ones({options.in_features}));
    if (normalization_ == Normalization::LayerNorm) {
        ln_bias_ = register_parameter("layer_norm_bias", init.zeros({options.in_features}));
    }
    weight_ = register_parameter("weight", init.normal({options.out_features, options.in_features}, options.init_std));
    if (options.bias) {
        bias_ = register_parameter("bias", init.zeros({options.out_features}));
    }
    slots_ = fp8_->add_gemm(name_);
}

std::vector<at::Tensor> LayerNormLinear::run(const at::Tensor& x, bool layernorm_output, bool input_output, std::int64_t heads,
                                             const std::shared_ptr<GradientHandOver>& input_grad,
                                             const std::shared_ptr<ScaleHandOver>& grad_scale) {
    check_features(name_, x, weight_.size(1));
    HeadSplit split;
    if (heads > 0) {
        if (x.dim() != 3 || weight_.size(0) % (3 * heads) != 0) {
            throw ConfigError(name_ + ": q, k and v of " + std::to_string(heads) + " heads need a [batch, seq, features] input and " +
                              "a multiple of 3 · heads outputs (" + std::to_string(weight_.size(0)) + ")");
        }
        split = HeadSplit{x.size(0), x.size(1), heads, weight_.size(0) / (3 * heads)};
    }
    const at::Tensor rows = x.reshape({-1, x.size(-1)});
    const GemmPlan gemm = plan_gemm(rows, fp8_, slots_, weight_cache_);
    const LayerNormPlan norm{gemm.ops, gemm.compute_dtype, eps_, normalization_};
    std::vector<at::Tensor> out =
        apply_layer_norm_linear(rows, ln_weight_, ln_bias_, weight_, bias_, norm, gemm, layernorm_output, input_output, split, input_grad,
                                grad_scale);
    if (split.active()) {
        if (!input_output || layernorm_output) throw std::logic_error(name_ + ": q, k and v come with x only");
        out.back() = out.back().view(x.sizes());
        return out;
    }
    std::vector<std::int64_t> shape(x.sizes().begin(), x.sizes().end());
    shape.back() = weight_.size(0);
    out[0] = out[0].view(shape);
    if (layernorm_output) out[1] = out[1].view(x.sizes());
    if (input_output) out.back() = out.back().view(x.sizes());
    return out;
}

std::pair<at::Tensor, at::Tensor> LayerNormLinear::forward_keeping_input(const at::Tensor& x,
                                                                          const std::shared_ptr<GradientHandOver>& input_grad,
                                                                          const std::shared_ptr<ScaleHandOver>& grad_scale) {
    const std::vector<at::Tensor> out = run(x, false, true, 0, input_grad, grad_scale);
    return {out[0], out[1]};
}

std::pair<at::Tensor, at::Tensor> LayerNormLinear::forward_with_layernorm_output(const at::Tensor& x) {
    const std::vector<at::Tensor> out = run(x, true);
    return {out[0], out[1]};
}

std::vector<at::Tensor> LayerNormLinear::forward_heads_keeping_input(const at::Tensor& x, std::int64_t heads,
                                                                     const std::shared_ptr<GradientHandOver>& input_grad,
                                                                     const std::shared_ptr<ScaleHandOver>& grad_scale) {
    if (heads < 1) throw ConfigError(name_ + ": heads " + std::to_string(heads) + "; allowed: at least 1");
    return run(x, false, true, heads, input_grad, grad_scale);
}

at::Tensor LayerNormLinear::forward(const at::Tensor& x) {
    return run(x, false)[0];  // no LayerNorm output asked for: in FP8 it is never written
}

}  // namespace tewb

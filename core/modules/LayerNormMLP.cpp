#include "core/modules/LayerNormMLP.h"

#include "core/common/Error.h"
#include "core/modules/ParameterInit.h"
#include "core/modules/Linear.h"
#include "core/modules/autograd/Functions.h"

namespace tewb {

LayerNormMLP::LayerNormMLP(std::string name, const Options& options, ParameterInit& init, std::shared_ptr<Fp8Context> fp8)
    : name_(std::move(name)),
      eps_(options.eps),
      normalization_(options.normalization),
      activation_(options.activation),
      fp8_(fp8 ? std::move(fp8) : std::make_shared<Fp8Context>()) {
    const std::int64_t fc1_out = activation_ == Activation::Swiglu ? 2 * options.ffn_hidden : options.ffn_hidden;
    ln_weight_ = register_parameter("layer_norm_weight", init.ones({options.hidden}));
    if (normalization_ == Normalization::LayerNorm) ln_bias_ = register_parameter("layer_norm_bias", init.zeros({options.hidden}));
    fc1_weight_ = register_parameter("fc1_weight", init.normal({fc1_out, options.hidden}, options.init_std));
    if (options.bias) fc1_bias_ = register_parameter("fc1_bias", init.zeros({fc1_out}));
    fc2_weight_ = register_parameter("fc2_weight", init.normal({options.hidden, options.ffn_hidden}, options.output_init_std));
    if (options.bias) fc2_bias_ = register_parameter("fc2_bias", init.zeros({options.hidden}));
    fc1_slots_ = fp8_->add_gemm(name_ + ".fc1");
    fc2_slots_ = fp8_->add_gemm(name_ + ".fc2");
}

at::Tensor LayerNormMLP::forward(const at::Tensor& x, const at::Tensor& residual, const std::shared_ptr<GradientHandOver>& input_grad,
                                 const std::shared_ptr<GradientHandOver>& output_grad) {
    check_features(name_, x, ln_weight_.size(0));
    if (residual.defined() && residual.sizes() != x.sizes()) {
        throw ConfigError(name_ + ": the residual's shape " + c10::str(residual.sizes()) + " is not the input's " + c10::str(x.sizes()));
    }
    const at::Tensor rows = x.reshape({-1, x.size(-1)});
    const GemmPlan fc1 = plan_gemm(rows, fp8_, fc1_slots_, fc1_cache_);
    const GemmPlan fc2 = plan_gemm(rows, fp8_, fc2_slots_, fc2_cache_);
    const LayerNormPlan norm{fc1.ops, fc1.compute_dtype, eps_, normalization_};
    // x itself as the residual stays one tensor, so its two gradients are summed in the LayerNorm backward.
    const at::Tensor residual_rows = !residual.defined()  ? at::Tensor()
                                     : residual.is_same(x) ? rows
                                                           : residual.reshape({-1, x.size(-1)});
    return apply_layer_norm_mlp(rows, ln_weight_, ln_bias_, fc1_weight_, fc1_bias_, fc2_weight_, fc2_bias_, norm, fc1, fc2,
                                residual_rows, activation_, input_grad, output_grad)
        .view(x.sizes());
}

}  // namespace tewb

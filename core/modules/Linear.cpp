#include "core/modules/Linear.h"

#include "core/common/Error.h"
#include "core/modules/ParameterInit.h"
#include "core/modules/autograd/Functions.h"

namespace tewb {

void check_features(const std::string& module, const at::Tensor& x, std::int64_t features) {
    if (x.dim() < 1 || x.size(-1) != features) {
        throw ConfigError(module + ": input has last dimension " + (x.dim() < 1 ? std::string("(none)") : std::to_string(x.size(-1))) +
                          "; expected " + std::to_string(features));
    }
}

Linear::Linear(std::string name, const Options& options, ParameterInit& init, std::shared_ptr<Fp8Context> fp8)
    : name_(std::move(name)), fp8_(fp8 ? std::move(fp8) : std::make_shared<Fp8Context>()) {
    weight_ = register_parameter("weight", init.normal({options.out_features, options.in_features}, options.init_std));
    if (options.bias) {
        bias_ = register_parameter("bias", init.zeros({options.out_features}));
    }
    slots_ = fp8_->add_gemm(name_);
}

at::Tensor Linear::forward(const at::Tensor& x, const at::Tensor& residual, const std::shared_ptr<GradientHandOver>& output_grad,
                           const std::shared_ptr<ScaleHandOver>& input_scale) {
    check_features(name_, x, weight_.size(1));
    const at::Tensor rows = x.reshape({-1, x.size(-1)});
    std::vector<std::int64_t> shape(x.sizes().begin(), x.sizes().end());
    shape.back() = weight_.size(0);
    at::Tensor residual_rows;
    if (residual.defined()) {
        if (residual.sizes() != c10::IntArrayRef(shape)) {
            throw ConfigError(name_ + ": the residual's shape " + c10::str(residual.sizes()) + " is not the output's " +
                              c10::str(c10::IntArrayRef(shape)));
        }
        residual_rows = residual.reshape({-1, weight_.size(0)});
    }
    const at::Tensor y =
        apply_linear(rows, weight_, bias_, plan_gemm(rows, fp8_, slots_, weight_cache_), residual_rows, output_grad, input_scale);
    return y.view(shape);
}

void Linear::ask_input_scale(const at::Tensor& like, ScaleHandOver& hand_over) {
    ask_input_scale_of(plan_gemm(like, fp8_, slots_, weight_cache_), hand_over);
}

}  // namespace tewb

#include "core/modules/RmsNorm.h"

#include "core/modules/Linear.h"
#include "core/modules/ParameterInit.h"
#include "core/modules/autograd/Functions.h"
#include "core/modules/ops/OpsChoice.h"

namespace tewb {

RmsNorm::RmsNorm(std::string name, std::int64_t hidden, ParameterInit& init, double eps) : name_(std::move(name)), eps_(eps) {
    weight_ = register_parameter("weight", init.ones({hidden}));
}

at::Tensor RmsNorm::forward(const at::Tensor& x, const std::shared_ptr<GradientHandOver>& input_grad) {
    check_features(name_, x, weight_.size(0));
    const at::Tensor rows = x.reshape({-1, x.size(-1)});
    const LayerNormPlan plan{&ops_in_force(x.device()), compute_dtype_for(x), eps_, Normalization::RmsNorm};
    return apply_layer_norm(rows, weight_, at::Tensor(), plan, input_grad).view(x.sizes());
}

}  // namespace tewb

#include "core/train/FusedAdamW.h"

#include <ATen/ops/_foreach_add.h>
#include <ATen/ops/_fused_adamw.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>

namespace tewb {

FusedAdamW::FusedAdamW(std::vector<at::Tensor> parameters, AdamWSettings settings)
    : parameters_(std::move(parameters)), settings_(settings) {
    for (const at::Tensor& p : parameters_) {
        exp_avg_.push_back(at::zeros_like(p, at::MemoryFormat::Preserve));
        exp_avg_sq_.push_back(at::zeros_like(p, at::MemoryFormat::Preserve));
        steps_.push_back(at::zeros({}, p.options().dtype(at::kFloat)));
    }
}

void FusedAdamW::zero_grad() {
    for (at::Tensor& p : parameters_) {
        p.mutable_grad().reset();
    }
}

void FusedAdamW::step() {
    std::vector<at::Tensor> params;
    std::vector<at::Tensor> grads;
    std::vector<at::Tensor> exp_avg;
    std::vector<at::Tensor> exp_avg_sq;
    std::vector<at::Tensor> steps;
    params.reserve(parameters_.size());
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
        const at::Tensor& grad = parameters_[i].grad();
        if (!grad.defined()) {
            continue;
        }
        params.push_back(parameters_[i]);
        grads.push_back(grad);
        exp_avg.push_back(exp_avg_[i]);
        exp_avg_sq.push_back(exp_avg_sq_[i]);
        steps.push_back(steps_[i]);
    }
    if (params.empty()) {
        return;
    }
    at::_foreach_add_(steps, 1.0);
    at::_fused_adamw_(params, grads, exp_avg, exp_avg_sq, /*max_exp_avg_sqs=*/{}, steps, settings_.lr, settings_.beta1,
                      settings_.beta2, settings_.weight_decay, settings_.eps, /*amsgrad=*/false, /*maximize=*/false);
}

}  // namespace tewb
